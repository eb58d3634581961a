/**
 * Every error the HTTP API returns, in one table: code, HTTP status, and when it happens.
 *
 * The wire shape is always the envelope `{ "error": { "code", "message", "details"? } }`.
 * `code` is stable (clients branch on it); `message` is for humans and says what to fix.
 * `docs/errors.md` is generated from this table (`renderErrorTable()`), and
 * `test/server/http/errors.test.ts` fails when the two drift apart.
 */
import type { SessionError, SessionErrorCode } from "../runtime/session/errors.js";

export const ERRORS = {
	VALIDATION_FAILED: {
		status: 400,
		description: "A parameter, query string, header or body field is missing or invalid; `message` names the field.",
	},
	INVALID_JSON: { status: 400, description: "The request body is not valid JSON." },
	JSON_TOO_DEEP: {
		status: 400,
		description:
			"The JSON body nests arrays and objects deeper than the server accepts (`MAX_JSON_DEPTH`, 64 levels, the body itself included).",
	},
	MALFORMED_REQUEST: {
		status: 400,
		description:
			"The request is not valid HTTP/1.1: unparsable request line or headers, an HTTP/1.1 request without `Host`, or a path with invalid percent-encoding. The connection is closed after the answer when the request could not be parsed.",
	},
	INVALID_EVENT_ID: {
		status: 400,
		description: "`Last-Event-ID` or `?after=` is not a non-negative integer event id.",
	},
	INVALID_IDEMPOTENCY_KEY: {
		status: 400,
		description: "The `Idempotency-Key` header is not 1–255 printable ASCII characters (space to `~`).",
	},
	UNKNOWN_MODEL: {
		status: 400,
		description:
			'The `model` is not `"provider/id"` of a model in `GET /v1/models` (nor, in the OpenAI-compatible API, the name of an agent profile). The OpenAI-compatible API answers it as OpenAI does: 404, `code: "model_not_found"`.',
	},
	MODEL_UNAVAILABLE: {
		status: 400,
		description:
			"The model needs an API key the server does not have (`available: false` in `GET /v1/models`); `message` names the variable to set.",
	},
	UNKNOWN_TOOL: { status: 400, description: "A tool name is not one of `GET /v1/tools`." },
	UNKNOWN_PROFILE: {
		status: 400,
		description:
			"A `profile` (of `POST /v1/sessions`, or AG-UI's `forwardedProps.wheelhouse.profile`) is not an agent profile of the server config's `profiles`; `message` lists them.",
	},
	UNAUTHORIZED: {
		status: 401,
		description:
			"API keys or JWT auth are configured and the request has no valid `Authorization: Bearer <key or token>` (an unknown key; a JWT that is expired, badly signed, or for another issuer or audience; an expired client token; on `/events`: nor a valid, unexpired stream or client token for this session). `WWW-Authenticate` names the error.",
	},
	FORBIDDEN: {
		status: 403,
		description:
			"`/metrics` was sent an API key, or no operator credential is configured while API keys are: it needs `Authorization: Bearer <WHEELHOUSE_METRICS_TOKEN>`. Also: a caller signed in with a JWT asked for a stream or client token while `auth.clientTokenSecret` is not configured.",
	},
	INSUFFICIENT_SCOPE: {
		status: 403,
		description:
			"A client token was used outside its one session or scopes (`read`, `write`, `approve`), or on a route no client token opens (minting tokens, listing, other sessions); or a JWT lacks a scope of `auth.jwt.requiredScopes`.",
	},
	NOT_FOUND: { status: 404, description: "No route matches the method and path." },
	SESSION_NOT_FOUND: {
		status: 404,
		description:
			"No session with this id exists for this caller (deleted, never created, or one it may not see: another caller's that is not shared with its tenant).",
	},
	SCHEDULE_NOT_FOUND: {
		status: 404,
		description: "No schedule with this id exists for this API key (deleted, never created, or another key's).",
	},
	MESSAGE_NOT_FOUND: {
		status: 404,
		description:
			"The message id (`atMessageId`, `toMessageId`, `:messageId`) names no message of this session's live transcript (ids are `wh-<index>`, see `GET /v1/sessions/:id/messages`), or not one of the kind the operation needs.",
	},
	TOOL_CALL_NOT_FOUND: {
		status: 404,
		description:
			"No tool call with this id waits for a result or approval in this session (never requested, or another kind).",
	},
	RESPONSE_NOT_FOUND: {
		status: 404,
		description:
			"No response with this id is known for this API key (`/openai/v1/responses/:id`: responses are stored with their session, the latest 1000 of each; `previous_response_id` works as long as the session exists).",
	},
	ENDPOINT_OFF: {
		status: 404,
		description:
			"The endpoint exists but this server's configuration turns it off; `message` names the setting (`POST /api/stream`: `WHEELHOUSE_PI_PROXY`).",
	},
	THREAD_NOT_FOUND: {
		status: 404,
		description:
			"No AG-UI thread with this id exists for this API key (`/agui/v1/threads/:threadId/events`: no run was posted for it, or its session was deleted; `RunAgentInput.threadId`: a session id, `ses_...`, that does not exist).",
	},
	METHOD_NOT_ALLOWED: {
		status: 405,
		description: "The path exists but not with this method; the `Allow` header lists the methods it has.",
	},
	NOT_ACCEPTABLE: {
		status: 406,
		description:
			"The `Accept` header does not take what the route answers: the MCP endpoint needs both `application/json` and `text/event-stream`.",
	},
	REQUEST_TIMEOUT: {
		status: 408,
		description: "The request's headers did not arrive within node's `headersTimeout`; the connection is closed.",
	},
	ELICITATION_NOT_FOUND: {
		status: 404,
		description: "No elicitation of an MCP server with this id waits for an answer in this session.",
	},
	ELICITATION_FINISHED: {
		status: 409,
		description: "The elicitation no longer waits: it was already answered, timed out, or its tool call ended.",
	},
	ELICITATION_INTERRUPTED: {
		status: 409,
		description:
			"The elicitation waited when the server restarted: the MCP server's request ended with that process and cannot be resumed, so it can no longer be answered.",
	},
	TOOL_CALL_FINISHED: {
		status: 409,
		description: "The tool call no longer waits: it was already answered, timed out, or its run ended or was aborted.",
	},
	AGENT_BUSY: {
		status: 409,
		description:
			'The session is running and `ifBusy` is `"reject"` (the default), or `continue` was called while running.',
	},
	CONTEXT_TOO_LARGE: {
		status: 409,
		description:
			"The session holds more transcript in memory (from its latest compaction on) than `WHEELHOUSE_MAX_SESSION_CONTEXT_BYTES`, so a run could not start; `details` has `bytes` and `max`. Compact it (`POST /v1/sessions/:id/compact`, or turn compaction on), or start a new session.",
	},
	BUDGET_EXHAUSTED: {
		status: 409,
		description:
			"The session has reached a limit of its `budget` (`maxTokens` or `maxCostUsd`): it takes no prompt, continue or compaction; `details` names the limit. Raise it with `PATCH /v1/sessions/:id`.",
	},
	KEY_BUDGET_EXHAUSTED: {
		status: 429,
		description:
			"The API key has reached a limit of its budget (config `keyBudgets`: `maxTokens` or `maxCostUsd` per UTC day or month): no session of the key takes a prompt, continue or compaction, nor `POST /api/stream` a call, until the period ends; `details` names the limit. `GET /v1/usage` shows what was spent.",
	},
	TENANT_BUDGET_EXHAUSTED: {
		status: 429,
		description:
			"The caller's tenant has reached a limit of its budget (config `auth.tenantBudgets`: `maxTokens` or `maxCostUsd` per UTC day or month, counted over every caller of the tenant and every replica): no session of the tenant takes a prompt, continue or compaction (on `/v1`, the OpenAI and AG-UI facades, A2A, MCP, schedules), nor `POST /api/stream` a call, until the period ends; `details` names the tenant and the limit. `GET /v1/usage` shows what was spent.",
	},
	USAGE_SCOPE_REQUIRED: {
		status: 403,
		description:
			"`GET /v1/usage?scope=tenant` reads the usage of the caller's whole tenant: it needs a JWT with the scope `auth.usageAdminScope` (default `usage:tenant`), or an API key of `auth.usageAdminKeys`, and a tenant. Without `scope=tenant` every caller reads its own usage.",
	},
	INVALID_USAGE_RANGE: {
		status: 400,
		description:
			"`GET /v1/usage`: `from` or `to` is not a calendar day (YYYY-MM-DD), `from` is after `to`, or the range spans more than 366 days.",
	},
	NOTHING_TO_COMPACT: {
		status: 409,
		description:
			"`POST .../compact` on a session whose context is all recent messages (within `keepRecentTokens`): there is nothing older to summarise.",
	},
	COMPACTION_ABORTED: {
		status: 409,
		description:
			"`POST .../compact`: the compaction was aborted (`POST .../abort` while it ran) before its summary was written. Nothing changed: the session goes on with its full context.",
	},
	IDEMPOTENCY_IN_PROGRESS: {
		status: 409,
		description:
			'A request with this `Idempotency-Key` is still being processed (e.g. a prompt with `ifBusy: "interrupt"` waiting for the active run to settle); repeat it once that one was answered.',
	},
	PAYLOAD_TOO_LARGE: {
		status: 413,
		description: "The request body exceeds the configured limit (`WHEELHOUSE_BODY_LIMIT`).",
	},
	UNSUPPORTED_MEDIA_TYPE: { status: 415, description: "The body's `Content-Type` is not `application/json`." },
	NOTHING_TO_CONTINUE: {
		status: 422,
		description: "`continue` on a session whose transcript is empty.",
	},
	NOTHING_TO_REGENERATE: {
		status: 422,
		description:
			"`regenerate` on a session with no user message followed by an answer: nothing to supersede (send a prompt, or `continue`).",
	},
	CANNOT_CONTINUE_FROM_ASSISTANT: {
		status: 422,
		description:
			"`continue` when the last message is the assistant's and no steering or follow-up message is queued: send a prompt instead.",
	},
	IDEMPOTENCY_KEY_REUSED: {
		status: 422,
		description:
			"The `Idempotency-Key` was already used on this session for a different request (another route or another body); use a new key for a new request.",
	},
	QUEUE_FULL: {
		status: 429,
		description: "The session already holds the maximum number of queued messages (`WHEELHOUSE_MAX_QUEUED`).",
	},
	QUEUE_TOO_LARGE: {
		status: 429,
		description:
			"The message would take the bytes queued on the session past `WHEELHOUSE_MAX_QUEUED_BYTES`, or on all the API key's sessions past `WHEELHOUSE_MAX_QUEUED_BYTES_PER_KEY`; `details.limit` names which. Wait for queued messages to drain, or DELETE the queue.",
	},
	TOO_MANY_SESSIONS: {
		status: 429,
		description: "The server holds the maximum number of sessions (`WHEELHOUSE_MAX_SESSIONS`).",
	},
	TOO_MANY_KEY_SESSIONS: {
		status: 429,
		description:
			"This API key already holds its maximum of sessions in memory, each with a run or an open stream (`WHEELHOUSE_MAX_SESSIONS_PER_KEY`); end a run or close a stream, or delete a session.",
	},
	TOO_MANY_STREAMS: {
		status: 429,
		description:
			"The stream would pass a limit of open SSE streams: per API key (`WHEELHOUSE_MAX_STREAMS_PER_KEY`) or per session (`WHEELHOUSE_MAX_STREAMS_PER_SESSION`); `details.limit` names which. Close a stream first.",
	},
	RATE_LIMITED: {
		status: 429,
		description:
			"This API key (this client IP when auth is off, or for requests without a valid key) sent more requests in the last minute than the server allows (`WHEELHOUSE_RATE_LIMIT_RPM`); `retry-after` says in how many seconds to retry.",
	},
	TOO_MANY_RUNS: {
		status: 429,
		description:
			'This API key already has the maximum number of runs running (`WHEELHOUSE_MAX_RUNS_PER_KEY`), or its tenant does (`auth.maxRunsPerTenant`); wait for one to end (`agent_end`), or queue the message with `ifBusy` on a running session. With `auth.admission: "queue"` a run waits for a slot instead (a prompt: 202 `waiting`; a request that starts its run itself waits, up to `auth.admissionTimeoutMs`); a pi `streamProxy` call still gets this.',
	},
	ADMISSION_TIMEOUT: {
		status: 429,
		description:
			'With `auth.admission: "queue"`, a request that starts its run itself (a facade\'s, `continue`, `regenerate`, `edit`) waited for a run slot of its tenant or API key longer than `auth.admissionTimeoutMs`; its place in the queue was given up and no run started. Retry later, or raise the limit.',
	},
	HEADERS_TOO_LARGE: {
		status: 431,
		description: "The request line and headers together exceed the HTTP server's limit (16 KiB by default).",
	},
	MODEL_ERROR: {
		status: 502,
		description:
			"The model call of an OpenAI-compatible request failed (the provider's error, or a run that ended without an answer); `message` is the provider's. In an AG-UI stream: the `code` of its `RUN_ERROR`.",
	},
	COMPACTION_FAILED: {
		status: 502,
		description:
			"`POST .../compact`: the model call that writes the summary failed (an abort is `COMPACTION_ABORTED`); `message` says why. Nothing changed: the session goes on with its full context.",
	},
	INTERNAL_ERROR: {
		status: 500,
		description: "An unexpected server failure; the message is masked, the log has details.",
	},
	SHUTTING_DOWN: { status: 503, description: "The server is shutting down and accepts no new runs." },
	ABORT_NOT_DELIVERED: {
		status: 503,
		description:
			"Cluster mode: `POST .../abort` on a replica that does not run the session could not tell the replica running it (Redis unreachable from here), so the run may go on. The abort is stored: the run stops if that replica finds it (it looks while it cannot reach Redis either) or if another replica takes the run over. Retry the abort.",
	},
	IDENTITY_PROVIDER_UNAVAILABLE: {
		status: 503,
		description:
			"`GET /playground/auth.json`: the playground's sign-in settings need the identity provider's discovery document (`<auth.jwt.issuer>/.well-known/openid-configuration`), and it could not be read or is not usable (another issuer, no PKCE S256, an endpoint not https); `message` says which. Retry later, or give `auth.jwt.playground.authorizationEndpoint` and `tokenEndpoint` in the config.",
	},
	STORE_UNAVAILABLE: {
		status: 503,
		description:
			"The session store's database (PostgreSQL) cannot be reached; nothing of the request was done. Retry later: `/readyz` answers 503 meanwhile.",
	},
} as const satisfies Record<string, { status: number; description: string }>;

/** Every stable error code. */
export type ErrorCode = keyof typeof ERRORS;

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

/** The most of one value (a quoted string, an echoed name or id) an error message repeats. */
export const MAX_QUOTED_CHARS = 200;
/** The most an error message says in all, however many values it names. */
export const MAX_MESSAGE_CHARS = 4_000;

/** `value` cut to `max` characters (never half a surrogate pair), saying how long it was; never cut twice. */
function cut(value: string, max: number): string {
	if (value.length <= max || ALREADY_CUT.test(value)) return value;
	let head = value.slice(0, max);
	if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
	return `${head}… (${value.length} characters)`;
}

/** What {@link cut} made: bounding a message twice changes nothing the second time. */
const ALREADY_CUT = new RegExp(`^[^]{0,${MAX_QUOTED_CHARS}}… \\(\\d+ characters\\)$`);

/** A quoted string, or a run without white space, longer than a value may be quoted. */
const LONG_VALUE = new RegExp(
	`"[^"]{${MAX_QUOTED_CHARS + 1},}"|\\S{${MAX_QUOTED_CHARS + 1},}(?!\\S)(?! \\(\\d+ characters\\))`,
	"g",
);

/**
 * An error message as it may be sent: a request's bad value is quoted, not echoed whole. Each
 * quoted string, and each run without white space (an unquoted value), of more than
 * {@link MAX_QUOTED_CHARS} characters is cut to that many, and the message to
 * {@link MAX_MESSAGE_CHARS}. A message of ordinary length is returned as it is.
 */
export function boundMessage(message: string): string {
	if (message.length <= MAX_QUOTED_CHARS) return message;
	const quoted = message.replace(LONG_VALUE, (value) =>
		value.startsWith('"') && value.endsWith('"') && value.length > 2
			? `"${cut(value.slice(1, -1), MAX_QUOTED_CHARS)}"`
			: cut(value, MAX_QUOTED_CHARS),
	);
	return cut(quoted, MAX_MESSAGE_CHARS);
}

/** A client's value for an error message: as JSON, at most {@link MAX_QUOTED_CHARS} characters of it. */
export function quote(value: unknown): string {
	const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
	return boundMessage(text);
}

/** `details` with every string in it bounded as a message is (objects and arrays kept, up to a depth). */
export function boundDetails(details: unknown, depth = 0): unknown {
	if (typeof details === "string") return boundMessage(details);
	if (depth > 4 || typeof details !== "object" || details === null) return details;
	if (Array.isArray(details)) return details.map((item) => boundDetails(item, depth + 1));
	return Object.fromEntries(Object.entries(details).map(([key, value]) => [key, boundDetails(value, depth + 1)]));
}

/** The JSON body of every error response. */
export interface ErrorEnvelope {
	error: { code: ErrorCode; message: string; details?: unknown };
}

/**
 * An error a route throws (or returns) to answer with a given code. The error handler sends it
 * as the envelope with the table's status.
 */
export class ApiError extends Error {
	readonly code: ErrorCode;
	readonly statusCode: number;
	readonly details?: unknown;

	/** `message` and the strings of `details` are bounded ({@link boundMessage}): they may quote the request. */
	constructor(code: ErrorCode, message: string, details?: unknown) {
		super(boundMessage(message));
		this.name = "ApiError";
		this.code = code;
		this.statusCode = ERRORS[code].status;
		this.details = details === undefined ? undefined : boundDetails(details);
	}

	toEnvelope(): ErrorEnvelope {
		return {
			error: {
				code: this.code,
				message: this.message,
				...(this.details === undefined ? {} : { details: this.details }),
			},
		};
	}
}

/**
 * The HTTP code of each refusal of the session layer: the session layer names what it refuses,
 * this table says how the HTTP API answers it (today each has the code of the same name).
 */
const SESSION_ERROR_CODES: { [K in SessionErrorCode]: ErrorCode } = {
	SESSION_NOT_FOUND: "SESSION_NOT_FOUND",
	AGENT_BUSY: "AGENT_BUSY",
	SHUTTING_DOWN: "SHUTTING_DOWN",
	NOTHING_TO_CONTINUE: "NOTHING_TO_CONTINUE",
	CANNOT_CONTINUE_FROM_ASSISTANT: "CANNOT_CONTINUE_FROM_ASSISTANT",
	QUEUE_FULL: "QUEUE_FULL",
	QUEUE_TOO_LARGE: "QUEUE_TOO_LARGE",
	VALIDATION_FAILED: "VALIDATION_FAILED",
	UNKNOWN_TOOL: "UNKNOWN_TOOL",
	UNKNOWN_MODEL: "UNKNOWN_MODEL",
	MODEL_UNAVAILABLE: "MODEL_UNAVAILABLE",
	TOO_MANY_SESSIONS: "TOO_MANY_SESSIONS",
	TOO_MANY_KEY_SESSIONS: "TOO_MANY_KEY_SESSIONS",
	ABORT_NOT_DELIVERED: "ABORT_NOT_DELIVERED",
	MESSAGE_NOT_FOUND: "MESSAGE_NOT_FOUND",
	NOTHING_TO_REGENERATE: "NOTHING_TO_REGENERATE",
	ADMISSION_TIMEOUT: "ADMISSION_TIMEOUT",
	BUDGET_EXHAUSTED: "BUDGET_EXHAUSTED",
	KEY_BUDGET_EXHAUSTED: "KEY_BUDGET_EXHAUSTED",
	TENANT_BUDGET_EXHAUSTED: "TENANT_BUDGET_EXHAUSTED",
	CONTEXT_TOO_LARGE: "CONTEXT_TOO_LARGE",
	UNKNOWN_PROFILE: "UNKNOWN_PROFILE",
	TOO_MANY_RUNS: "TOO_MANY_RUNS",
};

/** The HTTP error of a refusal of the session layer (its code's status, its message and details). */
export function fromSessionError(error: SessionError): ApiError {
	return new ApiError(SESSION_ERROR_CODES[error.code], error.message, error.details);
}

/** Shorthand for `new ApiError(code, message, details)`. */
export function apiError(code: ErrorCode, message: string, details?: unknown): ApiError {
	return new ApiError(code, message, details);
}

/** Throws the `VALIDATION_FAILED` of a request field the schema let through: `<field>: <problem>`. */
export function invalidField(field: string, problem: string): never {
	throw apiError("VALIDATION_FAILED", `${field}: ${problem}`);
}

/** The Markdown table of `docs/errors.md`. */
export function renderErrorTable(): string {
	const rows = ERROR_CODES.map((code) => `| \`${code}\` | ${ERRORS[code].status} | ${ERRORS[code].description} |`);
	return [
		"# Error codes",
		"",
		'Every error response has the body `{ "error": { "code": string, "message": string, "details"?: any } }`.',
		"`code` is stable; `message` is for humans and says what to fix. Generated from `src/server/http/errors.ts`.",
		`A message quotes at most ${MAX_QUOTED_CHARS} characters of a value the request sent (a longer one is cut and its length given).`,
		"",
		"| code | HTTP status | when |",
		"|---|---|---|",
		...rows,
		"",
	].join("\n");
}
