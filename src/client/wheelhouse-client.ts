/**
 * `WheelhouseClient`: one typed method per `/v1` operation of a Wheelhouse server, over `fetch`
 * (browsers and Node), with the request and response types generated from openapi.yaml.
 *
 * Calls that start or queue a run (prompt, continue, steer, follow-up) carry an `Idempotency-Key`
 * (a new one unless given), so the client may repeat them after a network error or a 502/503/504
 * without a second run; reads are repeated the same way. Every error answer throws a
 * {@link WheelhouseError} with the server's stable `code`.
 */
import type { components, operations } from "./api-types.js";
import { errorFromResponse, type WheelhouseError } from "./errors.js";
import { newIdempotencyKey } from "./idempotency.js";
import { endsRun, type ReceivedEvent, type StreamEventsOptions, streamEvents } from "./stream-events.js";

type Schemas = components["schemas"];
/** The JSON body of an operation's answer with status `S`. */
type JsonAnswer<Op extends keyof operations, S extends number> =
	operations[Op]["responses"] extends Record<S, { content: { "application/json": infer T } }> ? T : never;
/** The JSON request body of an operation. */
type JsonBody<Op extends keyof operations> = operations[Op] extends {
	requestBody: { content: { "application/json": infer T } };
}
	? T
	: operations[Op] extends { requestBody?: { content: { "application/json": infer T } } }
		? T
		: never;

export type Session = Schemas["Session"];
export type SessionSummary = Schemas["SessionSummary"];
export type SessionList = Schemas["SessionList"];
export type CreateSessionBody = Schemas["CreateSessionBody"];
export type PatchSessionBody = Schemas["PatchSessionBody"];
export type MessagePage = Schemas["MessagePage"];
export type AgentMessage = Schemas["AgentMessage"];
export type MessageInput = Schemas["MessageInput"];
export type ImageContent = Schemas["ImageContent"];
export type IfBusy = Schemas["IfBusy"];
export type RunAccepted = Schemas["RunAccepted"];
export type QueuedAccepted = Schemas["QueuedAccepted"];
export type ClearQueueResult = Schemas["ClearQueueResult"];
export type AbortResult = Schemas["AbortResult"];
export type StreamToken = Schemas["StreamToken"];
export type ClientToken = Schemas["ClientToken"];
export type ClientScope = Schemas["MintClientTokenBody"]["scopes"][number];
export type Identity = Schemas["Identity"];
export type UsageReport = Schemas["UsageReport"];
export type ModelList = Schemas["ModelList"];
export type Model = Schemas["Model"];
export type ToolList = Schemas["ToolList"];
export type ApprovalDecision = Schemas["ApprovalDecision"];
export type ClientToolResult = Schemas["ClientToolResult"];
export type ClientToolSpec = Schemas["ClientToolSpec"];
export type InteractionAccepted = Schemas["InteractionAccepted"];
export type ElicitationAnswer = Schemas["ElicitationAnswer"];
export type ElicitationAccepted = Schemas["ElicitationAccepted"];
export type ToolDeclarations = JsonBody<"putSessionsByIdToolDeclarations">;
export type CompactBody = JsonBody<"postSessionsByIdCompact">;
export type CompactResult = JsonAnswer<"postSessionsByIdCompact", 200>;
export type McpServerList = JsonAnswer<"getToolsMcpServers", 200>;
export type DeleteResult = JsonAnswer<"deleteSessionsById", 200>;
export type Schedule = Schemas["Schedule"];
export type ScheduleList = Schemas["ScheduleList"];
export type ScheduleFire = Schemas["ScheduleFire"];
export type ScheduleFireList = Schemas["ScheduleFireList"];
export type CreateScheduleBody = Schemas["CreateScheduleBody"];
export type PatchScheduleBody = Schemas["PatchScheduleBody"];
export type ForkBody = Schemas["ForkBody"];
export type RewindResult = Schemas["RewindResult"];
export type SupersededBranch = Schemas["SupersededBranch"];
export type EditMessageBody = Schemas["EditMessageBody"];

/** What `listSessions` may filter by (see docs/branching.md); every condition must hold. */
export interface SessionListFilter {
	status?: "idle" | "running" | "interrupted";
	profile?: string;
	/** Each pair must be in the session's metadata (up to 8). */
	metadata?: Record<string, string>;
	updatedAfter?: number;
	updatedBefore?: number;
}

export interface WheelhouseClientOptions {
	/** The server's origin, e.g. `http://localhost:3000`. */
	baseUrl: string;
	/** Sent as `Authorization: Bearer …` when set. */
	apiKey?: string;
	/** Extra headers on every request. */
	headers?: Record<string, string>;
	/** Default: `globalThis.fetch`. */
	fetch?: typeof fetch;
	/**
	 * Repeats of a read or of a call with an `Idempotency-Key` after a network error or a
	 * 502/503/504 (default 2; 0 turns it off). Other calls are sent once.
	 */
	retries?: number;
	/** Wait before a repeat when the server sent no `Retry-After` (default 250 ms, doubling). */
	retryDelayMs?: number;
}

/** Options of a call that starts or queues a run. */
export interface RunCallOptions {
	/** Sent as `Idempotency-Key`; default: a new random key per call. */
	idempotencyKey?: string;
	signal?: AbortSignal;
}

export interface PromptOptions extends RunCallOptions {
	images?: ImageContent[];
	/** What to do when a run is active: refuse (409 `AGENT_BUSY`), or queue as steer / follow-up. */
	ifBusy?: IfBusy;
}

export interface QueueOptions extends RunCallOptions {
	images?: ImageContent[];
}

/** Options of a streamed run, besides the call's own. */
export type RunStreamOptions = Omit<
	StreamEventsOptions,
	"url" | "init" | "resumeUrl" | "headers" | "fetch" | "repeatable"
>;

interface RequestSpec {
	method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
	path: string;
	query?: Record<string, string | number | undefined>;
	body?: unknown;
	idempotencyKey?: string;
	signal?: AbortSignal;
}

const RETRIED_STATUSES = new Set([502, 503, 504]);

/** A Wheelhouse server's `/v1` API. See docs/client.md. */
export class WheelhouseClient {
	readonly baseUrl: string;
	readonly #apiKey: string | undefined;
	readonly #headers: Record<string, string>;
	readonly #fetch: typeof fetch;
	readonly #retries: number;
	readonly #retryDelayMs: number;

	constructor(options: WheelhouseClientOptions) {
		if (!options?.baseUrl) throw new TypeError("WheelhouseClient: `baseUrl` is required (e.g. http://localhost:3000)");
		this.baseUrl = options.baseUrl.replace(/\/+$/, "");
		this.#apiKey = options.apiKey;
		this.#headers = { ...options.headers };
		this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
		this.#retries = options.retries ?? 2;
		this.#retryDelayMs = options.retryDelayMs ?? 250;
	}

	// ── catalog ──────────────────────────────────────────────────────────────────────────────

	/** `GET /v1/models`: the models sessions can use. */
	models(signal?: AbortSignal): Promise<ModelList> {
		return this.#json({ method: "GET", path: "/v1/models", signal });
	}

	/** `GET /v1/tools`: the server tools sessions can enable. */
	tools(signal?: AbortSignal): Promise<ToolList> {
		return this.#json({ method: "GET", path: "/v1/tools", signal });
	}

	/** `GET /v1/tools/mcp-servers`: the configured MCP servers and their tools. */
	mcpServers(signal?: AbortSignal): Promise<McpServerList> {
		return this.#json({ method: "GET", path: "/v1/tools/mcp-servers", signal });
	}

	/** `GET /v1/usage`: tokens and cost of the caller's key by day and model (`from`/`to`: YYYY-MM-DD). */
	usage(range: { from?: string; to?: string } = {}, signal?: AbortSignal): Promise<UsageReport> {
		return this.#json({ method: "GET", path: "/v1/usage", query: range, signal });
	}

	// ── sessions ─────────────────────────────────────────────────────────────────────────────

	/** `POST /v1/sessions`. */
	createSession(body: CreateSessionBody = {}, signal?: AbortSignal): Promise<Session> {
		return this.#json({ method: "POST", path: "/v1/sessions", body, signal });
	}

	/** `GET /v1/sessions/:id`: config and live state (status, queue, pending approvals…). */
	getSession(id: string, signal?: AbortSignal): Promise<Session> {
		return this.#json({ method: "GET", path: sessionPath(id), signal });
	}

	/**
	 * `GET /v1/sessions`: one page, oldest first; pass `nextCursor` as `cursor` for the next. With
	 * filter fields, only the sessions that match them (`metadata` pairs go as `metadata.<key>`).
	 */
	listSessions(
		page: { cursor?: string; limit?: number } & SessionListFilter = {},
		signal?: AbortSignal,
	): Promise<SessionList> {
		const { metadata, ...rest } = page;
		const query: Record<string, string | number | undefined> = { ...rest };
		for (const [key, value] of Object.entries(metadata ?? {})) query[`metadata.${key}`] = value;
		return this.#json({ method: "GET", path: "/v1/sessions", query, signal });
	}

	/**
	 * `POST /v1/sessions/:id/fork`: a new session from this one's config and transcript up to
	 * `atMessageId` (`wh-<index>`). Keyed as a run call (`options.idempotencyKey`, or a new key), so
	 * a repeat after a lost answer gets the same fork.
	 */
	forkSession(id: string, body: ForkBody = {}, options?: AbortSignal | RunCallOptions): Promise<Session> {
		return this.#json({ method: "POST", path: `${sessionPath(id)}/fork`, body, ...keyedCall(options) });
	}

	/**
	 * `POST /v1/sessions/:id/rewind`: the transcript ends with `toMessageId` (`wh-<index>`); what
	 * followed is kept as a superseded branch (see docs/branching.md).
	 */
	rewindSession(id: string, toMessageId: string, options?: AbortSignal | RunCallOptions): Promise<RewindResult> {
		return this.#json({
			method: "POST",
			path: `${sessionPath(id)}/rewind`,
			body: { toMessageId },
			...keyedCall(options),
		});
	}

	/** `POST /v1/sessions/:id/regenerate` (202): the answer to the last user message is superseded and answered again. */
	regenerate(id: string, options?: AbortSignal | RunCallOptions): Promise<RunAccepted> {
		return this.#json({ method: "POST", path: `${sessionPath(id)}/regenerate`, ...keyedCall(options) });
	}

	/** `PATCH /v1/sessions/:id/messages/:messageId` (202): replaces a user message and runs from it. */
	editMessage(
		id: string,
		messageId: string,
		body: EditMessageBody,
		options?: AbortSignal | RunCallOptions,
	): Promise<RunAccepted> {
		return this.#json({
			method: "PATCH",
			path: `${sessionPath(id)}/messages/${encodeURIComponent(messageId)}`,
			body,
			...keyedCall(options),
		});
	}

	/** `GET /v1/sessions/:id/branches`: what rewinds, regenerates and edits superseded, oldest first. */
	async listBranches(id: string, signal?: AbortSignal): Promise<SupersededBranch[]> {
		const list: { branches: SupersededBranch[] } = await this.#json({
			method: "GET",
			path: `${sessionPath(id)}/branches`,
			signal,
		});
		return list.branches;
	}

	/** `POST /v1/schedules`: a cron or one-shot schedule prompting a new session per fire (`profile`) or one session (`sessionId`). */
	createSchedule(body: CreateScheduleBody, signal?: AbortSignal): Promise<Schedule> {
		return this.#json({ method: "POST", path: "/v1/schedules", body, signal });
	}

	/** `GET /v1/schedules`: one page, oldest first. */
	listSchedules(page: { cursor?: string; limit?: number } = {}, signal?: AbortSignal): Promise<ScheduleList> {
		return this.#json({ method: "GET", path: "/v1/schedules", query: page, signal });
	}

	/** `GET /v1/schedules/:id`. */
	getSchedule(id: string, signal?: AbortSignal): Promise<Schedule> {
		return this.#json({ method: "GET", path: schedulePath(id), signal });
	}

	/** `PATCH /v1/schedules/:id`: a timing change computes the next tick again. */
	updateSchedule(id: string, patch: PatchScheduleBody, signal?: AbortSignal): Promise<Schedule> {
		return this.#json({ method: "PATCH", path: schedulePath(id), body: patch, signal });
	}

	/** `DELETE /v1/schedules/:id`: the schedule and its fire records. */
	deleteSchedule(id: string, signal?: AbortSignal): Promise<{ deleted: boolean; id: string }> {
		return this.#json({ method: "DELETE", path: schedulePath(id), signal });
	}

	/** `POST /v1/schedules/:id/pause` / `resume`. */
	pauseSchedule(id: string, signal?: AbortSignal): Promise<Schedule> {
		return this.#json({ method: "POST", path: `${schedulePath(id)}/pause`, signal });
	}

	resumeSchedule(id: string, signal?: AbortSignal): Promise<Schedule> {
		return this.#json({ method: "POST", path: `${schedulePath(id)}/resume`, signal });
	}

	/** `POST /v1/schedules/:id/run-now`: fires once now; resolves to the fire once its run started. */
	runScheduleNow(id: string, signal?: AbortSignal): Promise<ScheduleFire> {
		return this.#json({ method: "POST", path: `${schedulePath(id)}/run-now`, signal });
	}

	/** `GET /v1/schedules/:id/fires`: newest first; pass `nextBefore` as `before` for older ones. */
	scheduleFires(
		id: string,
		page: { before?: number; limit?: number } = {},
		signal?: AbortSignal,
	): Promise<ScheduleFireList> {
		return this.#json({ method: "GET", path: `${schedulePath(id)}/fires`, query: page, signal });
	}

	/** Every session, following the cursor page by page. */
	async *allSessions(pageSize = 200, signal?: AbortSignal): AsyncGenerator<SessionSummary, void, undefined> {
		let cursor: string | undefined;
		do {
			const page = await this.listSessions({ cursor, limit: pageSize }, signal);
			yield* page.sessions;
			cursor = page.nextCursor;
		} while (cursor);
	}

	/** `PATCH /v1/sessions/:id`: change model, prompt, tools, modes, metadata… (a field left out stays). */
	updateSession(id: string, patch: PatchSessionBody, signal?: AbortSignal): Promise<Session> {
		return this.#json({ method: "PATCH", path: sessionPath(id), body: patch, signal });
	}

	/** `DELETE /v1/sessions/:id`: abort its run, then delete it and everything of it. */
	deleteSession(id: string, signal?: AbortSignal): Promise<DeleteResult> {
		return this.#json({ method: "DELETE", path: sessionPath(id), signal });
	}

	/** `GET /v1/sessions/:id/messages`: one page of the transcript. */
	messages(id: string, page: { offset?: number; limit?: number } = {}, signal?: AbortSignal): Promise<MessagePage> {
		return this.#json({ method: "GET", path: `${sessionPath(id)}/messages`, query: page, signal });
	}

	/** `PUT /v1/sessions/:id/tool-declarations`: replace client tools and/or approval policies. */
	setToolDeclarations(id: string, declarations: ToolDeclarations, signal?: AbortSignal): Promise<Session> {
		return this.#json({ method: "PUT", path: `${sessionPath(id)}/tool-declarations`, body: declarations, signal });
	}

	// ── runs ─────────────────────────────────────────────────────────────────────────────────

	/** `POST /v1/sessions/:id/prompt` (202): starts a run, or queues the message with `ifBusy`. */
	prompt(id: string, message: MessageInput, options: PromptOptions = {}): Promise<RunAccepted | QueuedAccepted> {
		const { idempotencyKey, signal, ...rest } = options;
		return this.#json({
			method: "POST",
			path: `${sessionPath(id)}/prompt`,
			body: { ...rest, message },
			idempotencyKey: idempotencyKey ?? newIdempotencyKey(),
			signal,
		});
	}

	/**
	 * `POST /v1/sessions/:id/prompt` as SSE: the run's events up to and including its `agent_end`
	 * (or a final `run_interrupted`). A disconnect resumes on `/events` with `Last-Event-ID`; the
	 * POST is repeated, with the same key, only while it has had no answer.
	 */
	streamPrompt(
		id: string,
		message: MessageInput,
		options: PromptOptions & RunStreamOptions = {},
	): AsyncGenerator<ReceivedEvent, void, undefined> {
		const { idempotencyKey, images, ifBusy, ...stream } = options;
		return this.#runStream(`${sessionPath(id)}/prompt`, id, { images, ifBusy, message }, idempotencyKey, stream);
	}

	/** `POST /v1/sessions/:id/continue` (202): continue from the transcript. */
	continue(id: string, options: RunCallOptions = {}): Promise<RunAccepted> {
		return this.#json({
			method: "POST",
			path: `${sessionPath(id)}/continue`,
			idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(),
			signal: options.signal,
		});
	}

	/** `POST /v1/sessions/:id/continue` as SSE, like {@link streamPrompt}. */
	streamContinue(id: string, options: RunCallOptions & RunStreamOptions = {}): AsyncGenerator<ReceivedEvent> {
		const { idempotencyKey, ...stream } = options;
		return this.#runStream(`${sessionPath(id)}/continue`, id, undefined, idempotencyKey, stream);
	}

	/** `POST /v1/sessions/:id/steer`: delivered after the current tool batch. */
	steer(id: string, message: MessageInput, options: QueueOptions = {}): Promise<QueuedAccepted> {
		return this.#queue("steer", id, message, options);
	}

	/** `POST /v1/sessions/:id/follow-up`: delivered when the agent would stop. */
	followUp(id: string, message: MessageInput, options: QueueOptions = {}): Promise<QueuedAccepted> {
		return this.#queue("follow-up", id, message, options);
	}

	/** `DELETE /v1/sessions/:id/queue`: clear both queues, or one. */
	clearQueue(id: string, kind?: "steer" | "followUp", signal?: AbortSignal): Promise<ClearQueueResult> {
		return this.#json({ method: "DELETE", path: `${sessionPath(id)}/queue`, query: { kind }, signal });
	}

	/** `POST /v1/sessions/:id/abort`: the active run ends with its `agent_end`; queued messages stay. */
	abort(id: string, signal?: AbortSignal): Promise<AbortResult> {
		return this.#json({ method: "POST", path: `${sessionPath(id)}/abort`, signal });
	}

	/** `POST /v1/sessions/:id/compact`: summarise the older messages now (409 while a run is active). */
	compact(id: string, body: CompactBody = {}, signal?: AbortSignal): Promise<CompactResult> {
		return this.#json({ method: "POST", path: `${sessionPath(id)}/compact`, body, signal });
	}

	// ── interactions ─────────────────────────────────────────────────────────────────────────

	/** `POST /v1/sessions/:id/approvals/:toolCallId`: approve or deny a call from `approval_requested`. */
	approve(
		id: string,
		toolCallId: string,
		decision: ApprovalDecision,
		signal?: AbortSignal,
	): Promise<InteractionAccepted> {
		return this.#json({
			method: "POST",
			path: `${sessionPath(id)}/approvals/${encodeURIComponent(toolCallId)}`,
			body: decision,
			signal,
		});
	}

	/** `POST /v1/sessions/:id/tool-results/:toolCallId`: the result of a client-side tool call. */
	toolResult(
		id: string,
		toolCallId: string,
		result: ClientToolResult,
		signal?: AbortSignal,
	): Promise<InteractionAccepted> {
		return this.#json({
			method: "POST",
			path: `${sessionPath(id)}/tool-results/${encodeURIComponent(toolCallId)}`,
			body: result,
			signal,
		});
	}

	/**
	 * `POST /v1/sessions/:id/elicitations/:elicitationId`: answer an MCP server's question from
	 * `elicitation_requested`: `accept` with `content` that fits its `requestedSchema` (else 400
	 * naming the field, and it still waits), `decline` or `cancel`.
	 */
	answerElicitation(
		id: string,
		elicitationId: string,
		answer: ElicitationAnswer,
		signal?: AbortSignal,
	): Promise<ElicitationAccepted> {
		return this.#json({
			method: "POST",
			path: `${sessionPath(id)}/elicitations/${encodeURIComponent(elicitationId)}`,
			body: answer,
			signal,
		});
	}

	// ── events ───────────────────────────────────────────────────────────────────────────────

	/**
	 * `GET /v1/sessions/:id/events`: the live stream (a `session_snapshot` first, or the retained
	 * events after `lastEventId`), resuming after disconnects until aborted or `until`.
	 */
	events(id: string, options: RunStreamOptions = {}): AsyncGenerator<ReceivedEvent, void, undefined> {
		const url = this.#url(`${sessionPath(id)}/events`);
		return streamEvents({ ...options, url, headers: this.#baseHeaders(), fetch: this.#fetch });
	}

	/** `POST /v1/sessions/:id/stream-token`: a short-lived token for `new EventSource(eventsUrl)`. */
	streamToken(id: string, signal?: AbortSignal): Promise<StreamToken> {
		return this.#json({ method: "POST", path: `${sessionPath(id)}/stream-token`, signal });
	}

	// ── identity ─────────────────────────────────────────────────────────────────────────────

	/**
	 * `POST /v1/tokens`: a short-lived token for one session with `scopes`, for a browser to hold
	 * instead of this client's key (as `apiKey` of another client, or `?token=` on the event stream).
	 */
	clientToken(
		sessionId: string,
		scopes: readonly ClientScope[],
		options: { ttlSeconds?: number; signal?: AbortSignal } = {},
	): Promise<ClientToken> {
		const { ttlSeconds, signal } = options;
		return this.#json({
			method: "POST",
			path: "/v1/tokens",
			body: { sessionId, scopes: [...scopes], ...(ttlSeconds === undefined ? {} : { ttlSeconds }) },
			signal,
		});
	}

	/** `GET /v1/me`: who the server takes this client for (subject, tenant, how it authenticated). */
	me(signal?: AbortSignal): Promise<Identity> {
		return this.#json({ method: "GET", path: "/v1/me", signal });
	}

	// ── plumbing ─────────────────────────────────────────────────────────────────────────────

	#queue(
		route: "steer" | "follow-up",
		id: string,
		message: MessageInput,
		options: QueueOptions,
	): Promise<QueuedAccepted> {
		const { idempotencyKey, signal, ...rest } = options;
		return this.#json({
			method: "POST",
			path: `${sessionPath(id)}/${route}`,
			body: { ...rest, message },
			idempotencyKey: idempotencyKey ?? newIdempotencyKey(),
			signal,
		});
	}

	#runStream(
		path: string,
		id: string,
		body: Record<string, unknown> | undefined,
		idempotencyKey: string | undefined,
		options: RunStreamOptions,
	): AsyncGenerator<ReceivedEvent, void, undefined> {
		const headers: Record<string, string> = { "idempotency-key": idempotencyKey ?? newIdempotencyKey() };
		if (body !== undefined) headers["content-type"] = "application/json";
		return streamEvents({
			until: endsRun,
			...options,
			url: this.#url(path),
			init: { method: "POST", headers, body: body === undefined ? undefined : JSON.stringify(dropUndefined(body)) },
			resumeUrl: this.#url(`${sessionPath(id)}/events`),
			repeatable: true,
			headers: this.#baseHeaders(),
			fetch: this.#fetch,
		});
	}

	#baseHeaders(): Record<string, string> {
		const headers = { ...this.#headers };
		if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
		return headers;
	}

	#url(path: string, query?: Record<string, string | number | undefined>): string {
		const url = new URL(this.baseUrl + path);
		for (const [key, value] of Object.entries(query ?? {})) {
			if (value !== undefined) url.searchParams.set(key, String(value));
		}
		return url.toString();
	}

	async #json<T>(spec: RequestSpec): Promise<T> {
		const headers: Record<string, string> = { accept: "application/json", ...this.#baseHeaders() };
		let body: string | undefined;
		if (spec.body !== undefined) {
			headers["content-type"] = "application/json";
			body = JSON.stringify(dropUndefined(spec.body));
		}
		if (spec.idempotencyKey !== undefined) headers["idempotency-key"] = spec.idempotencyKey;
		const repeatable = spec.method === "GET" || spec.idempotencyKey !== undefined;
		const url = this.#url(spec.path, spec.query);
		for (let attempt = 0; ; attempt++) {
			const canRetry = repeatable && attempt < this.#retries;
			let response: Response;
			try {
				response = await this.#fetch(url, { method: spec.method, headers, body, signal: spec.signal });
			} catch (error) {
				if (!canRetry || spec.signal?.aborted) throw error;
				await sleep(this.#retryDelayMs * 2 ** attempt, spec.signal);
				continue;
			}
			if (response.ok) return (await response.json()) as T;
			const error = await errorFromResponse(response);
			if (!canRetry || !RETRIED_STATUSES.has(response.status)) throw error;
			await sleep(retryWait(error, this.#retryDelayMs * 2 ** attempt), spec.signal);
		}
	}
}

/**
 * The key and signal of a branching call: `options.idempotencyKey` or a new key (so the call is
 * repeated after a network error as a run call is); `options` may be a bare signal.
 */
function keyedCall(options: AbortSignal | RunCallOptions | undefined): {
	idempotencyKey: string;
	signal?: AbortSignal;
} {
	const { idempotencyKey, signal } = isSignal(options)
		? { idempotencyKey: undefined, signal: options }
		: (options ?? {});
	return { idempotencyKey: idempotencyKey ?? newIdempotencyKey(), ...(signal ? { signal } : {}) };
}

function isSignal(value: unknown): value is AbortSignal {
	return typeof AbortSignal !== "undefined" && value instanceof AbortSignal;
}

function schedulePath(id: string): string {
	if (typeof id !== "string" || id === "") throw new TypeError("WheelhouseClient: a schedule `id` is required");
	return `/v1/schedules/${encodeURIComponent(id)}`;
}

function sessionPath(id: string): string {
	if (typeof id !== "string" || id === "") throw new TypeError("WheelhouseClient: a session `id` is required");
	return `/v1/sessions/${encodeURIComponent(id)}`;
}

/** `JSON.stringify` drops undefined fields too; this keeps the intent visible for nested option objects. */
function dropUndefined(body: unknown): unknown {
	if (!body || typeof body !== "object" || Array.isArray(body)) return body;
	return Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined));
}

function retryWait(error: WheelhouseError, fallbackMs: number): number {
	return error.retryAfterSeconds !== undefined ? Math.min(error.retryAfterSeconds * 1000, 30_000) : fallbackMs;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
	return new Promise((resolve) => {
		if (signal?.aborted) return resolve();
		const timer = setTimeout(resolve, ms);
		signal?.addEventListener(
			"abort",
			() => {
				clearTimeout(timer);
				resolve();
			},
			{ once: true },
		);
	});
}
