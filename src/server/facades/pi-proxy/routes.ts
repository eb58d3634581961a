/**
 * `POST /api/stream`: the server side of pi's `streamProxy` (`@mariozechner/pi-agent-core`
 * 0.73.1), for clients that run their own agent loop but must not hold provider keys. One request
 * is one model call, made with `streamSimple` on the server's own model and keys, and streamed back
 * as proxy events (encoding.ts). No session is involved: the client owns the conversation.
 *
 * 1. Off unless configured (`WHEELHOUSE_PI_PROXY`, see {@link piProxyEnabled}): the endpoint runs
 *    any context on the server's provider keys.
 * 2. The bearer key, like every route (auth.ts).
 * 3. The model is the server's: looked up in its catalogue by the body's `provider` and `id`. The
 *    client's `baseUrl`, `headers` and compat settings are never used, so the server's keys only
 *    ever go to the servers it is configured for.
 * 4. The stream: `start` at once, the model's events, then exactly one `done` or `error` — also when
 *    the model stream breaks its contract, the reader falls behind, or the server shuts down: a
 *    stream that ends without one leaves the client's agent loop waiting forever. `data:` lines
 *    only, LF, no `[DONE]`.
 * 5. The client closing the response (its agent aborted) aborts the model call.
 * 6. The key's budget (`keyBudgets`) and its tenant's (`auth.tenantBudgets`, read from the store)
 *    are checked before the call, as for a run's model calls (429 `KEY_BUDGET_EXHAUSTED`,
 *    `TENANT_BUDGET_EXHAUSTED`), and the call's usage is added to the key's usage rows, marked with
 *    the caller's tenant (`GET /v1/usage`, one turn), and budgets before the stream ends, and to
 *    the model metrics.
 *
 * Errors before the stream are JSON `{ error, code }`: the client shows `error` when it is a
 * string (`Proxy error: <error>`), so the envelope's message moves up and its code stays beside.
 */
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { streamSimple } from "../../../ai/stream.js";
import type { AssistantMessage, Context, Model, SimpleStreamOptions } from "../../../ai/types.js";
import type { SessionStore } from "../../../store/types.js";
import { usageEntriesOf } from "../../../store/usage.js";
import type { ServerConfig } from "../../config/config.js";
import { apiError } from "../../http/errors.js";
import { hasJwtAuth } from "../../http/identity/settings.js";
import { routePlugin } from "../../http/plugins.js";
import { openSse } from "../../http/sse/open.js";
import type { WatchModelCall } from "../../observability/model-call-metrics.js";
import type { KeyBudgets } from "../../runtime/budgets/key-budgets.js";
import { keyBudgetError, tenantBudgetError } from "../../runtime/budgets/spent.js";
import type { TenantBudgets } from "../../runtime/budgets/tenant-budgets.js";
import { specOf } from "../../runtime/model-catalog.js";
import type { RunSlots } from "../../runtime/session/run-slots.js";
import { checkContext } from "./context-check.js";
import { ProxyEncoder } from "./encoding.js";
import { PiProxyError, PiStreamBody, ProxyEventStream } from "./schemas.js";
import { type ProxyStreams, SHUTDOWN_ABORT } from "./streams.js";

export interface PiProxyOptions {
	/** The calls in flight, drained at shutdown. */
	streams: ProxyStreams;
	/** The server's key for a provider (config, then environment). */
	getApiKey(provider: string): string | undefined;
	/** The per-key limit of concurrent runs; a call counts as one. Absent: no limit. */
	runSlots?: RunSlots;
	/** The per-key budgets: checked before a call, added to after it (step 6). */
	keyBudgets: KeyBudgets;
	/** The per-tenant budgets: the caller's tenant's is checked (read from the store) before the call. */
	tenantBudgets?: TenantBudgets;
	/** Where the calls' usage rows go (step 6). */
	store: SessionStore;
	/** Notes each call in the model metrics. */
	watchModelCall: WatchModelCall;
}

/** The options of the body the server passes on (everything else, `headers` included, is dropped). */
type ClientOptions = Pick<
	SimpleStreamOptions,
	| "temperature"
	| "maxTokens"
	| "reasoning"
	| "cacheRetention"
	| "sessionId"
	| "transport"
	| "thinkingBudgets"
	| "maxRetryDelayMs"
	| "metadata"
>;

interface PiStreamRequest {
	model: { provider: string; id: string };
	context: unknown;
	options?: ClientOptions;
}

/**
 * Whether `POST /api/stream` is served. `auto` (the default) serves it only when API keys are
 * configured: it exists for clients that must not hold the provider keys, which is a deployment
 * where callers authenticate; a keyless server (local use) turns it on with `on`.
 */
export function piProxyEnabled(config: Pick<ServerConfig, "piProxy" | "apiKeys" | "authConfig">): boolean {
	const authenticated = config.apiKeys.length > 0 || hasJwtAuth(config.authConfig);
	return config.piProxy === "on" || (config.piProxy === "auto" && authenticated);
}

function offMessage(config: ServerConfig): string {
	if (config.piProxy === "off") {
		return "POST /api/stream (pi's streamProxy) is off on this server (WHEELHOUSE_PI_PROXY=off); set WHEELHOUSE_PI_PROXY=auto with API keys, or on, to serve it.";
	}
	return "POST /api/stream (pi's streamProxy) runs any context on the server's provider keys, so it is served only when API keys are configured: set WHEELHOUSE_API_KEYS, or WHEELHOUSE_PI_PROXY=on to serve it without keys.";
}

/** Only what the client may choose; the key, signal and timeout are the server's. */
function passedOptions(options: ClientOptions | undefined): ClientOptions {
	const o = options ?? {};
	return {
		temperature: o.temperature,
		maxTokens: o.maxTokens,
		reasoning: o.reasoning,
		cacheRetention: o.cacheRetention,
		sessionId: o.sessionId,
		transport: o.transport,
		thinkingBudgets: o.thinkingBudgets,
		maxRetryDelayMs: o.maxRetryDelayMs,
		metadata: o.metadata,
	};
}

const SHUTDOWN_MESSAGE = "The server shut down during the model call; send the request again.";
const SLOW_READER_MESSAGE = "The client did not read the stream fast enough and it was ended; send the request again.";
const NO_END_MESSAGE = "The model stream ended without a final event.";

export const piProxyRoutes: FastifyPluginAsync<PiProxyOptions> = routePlugin(
	"wheelhouse-pi-proxy",
	async (app, options) => {
		const { streams, getApiKey, runSlots, keyBudgets, tenantBudgets, store, watchModelCall } = options;
		const { config, catalog } = app.wheelhouse;
		const enabled = piProxyEnabled(config);

		app.addHook("preSerialization", async function piProxyErrorShape(_request, reply, payload) {
			const error = (payload as { error?: { code?: unknown; message?: unknown } } | null)?.error;
			if (reply.statusCode < 400 || !error || typeof error.code !== "string") return payload;
			return { error: error.message, code: error.code };
		});

		/**
		 * Step 6 after a call: its usage in the key's budget and usage rows (a call refused before it
		 * reached the model, with no tokens, is none). A store that cannot take it is logged: the answer
		 * was streamed already.
		 */
		async function account(reply: FastifyReply, message: AssistantMessage): Promise<void> {
			const ownerId = reply.request.ownerId;
			const tenant = reply.request.principal?.tenant ?? null;
			const entries = usageEntriesOf([message]);
			if (entries.length === 0) return;
			keyBudgets.add(ownerId, message.usage);
			tenantBudgets?.add(tenant, message.usage);
			try {
				await store.recordUsage(ownerId, entries, tenant);
			} catch (err) {
				reply.request.log.error(
					{ err, model: `${message.provider}/${message.model}` },
					"pi proxy: the call's usage could not be stored",
				);
			}
		}

		/** Streams one model call to `reply` (step 4); resolves once the stream ended. */
		async function relay(
			reply: FastifyReply,
			model: Model<any>,
			context: Context,
			options: ClientOptions,
			abort: AbortController,
		): Promise<void> {
			const encoder = new ProxyEncoder();
			// Step 5: the response closed before its end (the client aborted, or was dropped).
			const sse = openSse(
				reply,
				app.wheelhouse.stream,
				() => abort.abort(),
				() => encoder.fail(SLOW_READER_MESSAGE),
			);
			sse.send(encoder.start());
			const chat = app.wheelhouse.tracing?.startModelCall(reply.request.traceContext, { model, context, options });
			const upstream = streamSimple(model, context, {
				...options,
				apiKey: getApiKey(model.provider),
				signal: abort.signal,
				timeoutMs: model.idleTimeoutMs ?? config.providerIdleTimeoutMs,
			});
			chat?.watch(upstream);
			const watch = watchModelCall();
			for await (const event of upstream) {
				if (event.type === "done" || event.type === "error") {
					const message = event.type === "done" ? event.message : event.error;
					watch?.end(message);
					// Before the final event goes out: a client that read it finds the call in its usage.
					await account(reply, message);
				} else if (event.type !== "start") watch?.output(event.partial);
				const shutDown = event.type === "error" && abort.signal.reason === SHUTDOWN_ABORT;
				const frames = encoder.encode(
					shutDown ? { ...event, error: { ...event.error, errorMessage: SHUTDOWN_MESSAGE } } : event,
				);
				if (frames) sse.send(frames);
				if (event.type === "error" && !abort.signal.aborted) {
					reply.request.log.info(
						{ model: specOf(model), errorMessage: event.error.errorMessage },
						"pi proxy: model call failed",
					);
				}
				if (encoder.finished) break;
			}
			if (!encoder.finished) {
				sse.send(encoder.fail(NO_END_MESSAGE));
				chat?.fail(NO_END_MESSAGE);
			}
			sse.end();
		}

		app.post(
			"/api/stream",
			{
				schema: {
					tags: ["pi"],
					summary: "One model call for pi's streamProxy, on the server's model and keys",
					body: PiStreamBody,
					response: { 200: ProxyEventStream, "4xx": PiProxyError, "5xx": PiProxyError },
				},
			},
			async function streamModelCall(request, reply) {
				// Step 1.
				if (!enabled) throw apiError("ENDPOINT_OFF", offMessage(config));
				if (streams.isClosing || app.wheelhouse.isShuttingDown()) {
					throw apiError(
						"SHUTTING_DOWN",
						"The server is shutting down and starts no new model call; retry on another instance.",
					);
				}
				// Step 3.
				const body = request.body as PiStreamRequest;
				const spec = `${body.model.provider}/${body.model.id}`;
				const problem = catalog.problem(spec);
				if (problem)
					throw apiError(
						problem.code,
						`body.model (provider "${body.model.provider}", id "${body.model.id}"): ${problem.message}`,
					);
				const model = catalog.resolve(spec) as Model<any>;
				const context = checkContext(body.context);
				// Step 6.
				await keyBudgets.load(request.ownerId);
				const spent = keyBudgets.keyLimit(request.ownerId);
				if (spent) throw keyBudgetError(spent);
				const tenant = request.principal?.tenant ?? null;
				await tenantBudgets?.refresh(tenant);
				const tenantSpent = tenantBudgets?.limit(tenant);
				if (tenantSpent) throw tenantBudgetError(tenant, tenantSpent);
				app.wheelhouse.streamSlots.hold(request.ownerId, undefined, reply.raw);
				runSlots?.acquire(request.ownerId);
				const abort = new AbortController();
				const done = relay(reply, model, context, passedOptions(body.options), abort);
				streams.track(abort, done);
				try {
					await done;
				} finally {
					runSlots?.release(request.ownerId);
				}
				return reply;
			},
		);
	},
);
