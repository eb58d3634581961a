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
 *
 * Errors before the stream are JSON `{ error, code }`: the client shows `error` when it is a
 * string (`Proxy error: <error>`), so the envelope's message moves up and its code stays beside.
 */
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { streamSimple } from "../../../ai/stream.js";
import type { Context, Model, SimpleStreamOptions } from "../../../ai/types.js";
import type { ServerConfig } from "../../config.js";
import { apiError } from "../../errors.js";
import type { RunSlots } from "../../limits.js";
import { specOf } from "../../model-catalog.js";
import { openSse } from "../../sse/open.js";
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
export function piProxyEnabled(config: Pick<ServerConfig, "piProxy" | "apiKeys">): boolean {
	return config.piProxy === "on" || (config.piProxy === "auto" && config.apiKeys.length > 0);
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

export const piProxyRoutes: FastifyPluginAsync<PiProxyOptions> = async (app, { streams, getApiKey, runSlots }) => {
	const { config, catalog } = app.wheelhouse;
	const enabled = piProxyEnabled(config);

	app.addHook("preSerialization", async function piProxyErrorShape(_request, reply, payload) {
		const error = (payload as { error?: { code?: unknown; message?: unknown } } | null)?.error;
		if (reply.statusCode < 400 || !error || typeof error.code !== "string") return payload;
		return { error: error.message, code: error.code };
	});

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
		for await (const event of upstream) {
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
};
