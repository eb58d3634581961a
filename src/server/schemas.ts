/**
 * TypeBox schemas of every route: params, query, body, responses. Fastify validates requests
 * with them (400 `VALIDATION_FAILED` names the field) and serialises responses with them; the
 * OpenAPI document is generated from them.
 *
 * Message objects (transcripts, events) are open objects (`additionalProperties: true`): their
 * exact shape is the pi-ai message types, and the serialiser must not drop fields of them.
 *
 * A `title` names a shape in the OpenAPI document: it is written once under
 * `components/schemas/<title>` and referenced at each use (openapi-components.ts). Give one to a
 * shape that is used in more than one place or that a client will want to name.
 */
import { type TSchema, Type } from "@sinclair/typebox";
import type { OnInterruptPolicy } from "../store/types.js";
import { KeyBudgetStateFields } from "./budgets/schemas.js";
import { CompactionSessionFields, CompactionStateFields } from "./compaction/settings.js";
import { ERROR_CODES } from "./errors.js";
import { CreateSessionToolFields, SessionToolStateFields } from "./session/tool-interactions.js";

const Open = (properties: Parameters<typeof Type.Object>[0], description?: string, title?: string) =>
	Type.Object(properties, {
		additionalProperties: true,
		...(description ? { description } : {}),
		...(title ? { title } : {}),
	});

export const ErrorEnvelope = Type.Object(
	{
		error: Type.Object({
			code: Type.Union(
				ERROR_CODES.map((c) => Type.Literal(c)),
				{ title: "ErrorCode", description: "Stable error code (see docs/errors.md)." },
			),
			message: Type.String({ description: "What went wrong and what to fix." }),
			details: Type.Optional(Type.Unknown()),
		}),
	},
	{ $id: "ErrorEnvelope", description: "Every error response." },
);

const errors = { "4xx": ErrorEnvelope, "5xx": ErrorEnvelope };

export const TextContent = Type.Object(
	{ type: Type.Literal("text"), text: Type.String() },
	{ additionalProperties: true, title: "TextContent" },
);
export const ImageContent = Type.Object(
	{
		type: Type.Literal("image"),
		data: Type.String({ description: "Base64, without a data: prefix." }),
		mimeType: Type.String({ pattern: "^image/[a-z0-9.+-]+$" }),
	},
	{ additionalProperties: false, title: "ImageContent" },
);

export const UserMessageInput = Type.Object(
	{
		role: Type.Literal("user"),
		content: Type.Union([Type.String(), Type.Array(Type.Union([TextContent, ImageContent]), { minItems: 1 })]),
		timestamp: Type.Optional(Type.Number()),
	},
	{
		additionalProperties: false,
		title: "UserMessageInput",
		description: "A pi-ai UserMessage; `timestamp` defaults to now.",
	},
);

export const MessageInput = Type.Union([Type.String({ minLength: 1 }), UserMessageInput], {
	title: "MessageInput",
	description: "The text of a user message, or a full UserMessage.",
});

/** Any transcript message (user, assistant, toolResult, or an application's custom message). */
export const AgentMessageSchema = Open(
	{ role: Type.String() },
	"A pi-ai message (user, assistant, toolResult) or a custom message.",
	"AgentMessage",
);

export const ThinkingLevel = Type.Union(
	["off", "minimal", "low", "medium", "high", "xhigh"].map((l) => Type.Literal(l)),
	{ title: "ThinkingLevel", description: "Reasoning level; `off` sends none." },
);
export const QueueMode = Type.Union([Type.Literal("all"), Type.Literal("one-at-a-time")], {
	title: "QueueMode",
	description: "How many queued messages one poll delivers.",
});
export const ToolExecution = Type.Union([Type.Literal("parallel"), Type.Literal("sequential")], {
	title: "ToolExecution",
});

/** A string enum (not a union of literals): a bad value is reported as `must be one of: continue, stop`. */
export const OnInterrupt = Type.Unsafe<OnInterruptPolicy>({
	type: "string",
	enum: ["continue", "stop"],
	title: "OnInterrupt",
	description:
		'What happens to a run the server process died during (a crash, a kill; in a cluster, the loss of its replica), once the server is back: `"continue"` (default) starts a new run from the last stored message by itself (a tool call that was in flight is run again only if its tool is declared idempotent; otherwise the model gets an error result saying the result was not recorded); `"stop"` leaves the session `interrupted` until POST /v1/sessions/:id/continue.',
});

export const ModelSpec = Type.String({
	pattern: "^[^/\\s]+/\\S+$",
	description: '`"provider/id"` of GET /v1/models.',
});

/** The session settings `POST /v1/sessions`, `PATCH` and agent profiles (profiles.ts) share. */
export const SessionConfigFields = {
	model: Type.Optional(ModelSpec),
	systemPrompt: Type.Optional(Type.String({ maxLength: 200_000 })),
	thinkingLevel: Type.Optional(ThinkingLevel),
	tools: Type.Optional(
		Type.Array(Type.String({ minLength: 1 }), {
			description:
				'Server tools to enable (GET /v1/tools): exact names and `prefix*` patterns, e.g. `"files__*"` for every tool of the MCP server `files`. Patterns also match tools registered later (an MCP server that connects or lists a new tool). Default `["*"]`: every server tool, current and future.',
			maxItems: 1000,
		}),
	),
	toolExecution: Type.Optional(ToolExecution),
	steeringMode: Type.Optional(QueueMode),
	followUpMode: Type.Optional(QueueMode),
	onInterrupt: Type.Optional(OnInterrupt),
	...CompactionSessionFields,
};

/** An agent profile's name: no `/` (so it is never a model id) and no whitespace. */
export const PROFILE_NAME = { minLength: 1, maxLength: 128, pattern: "^[^/\\s]+$" } as const;

export const CreateSessionBody = Type.Object(
	{
		profile: Type.Optional(
			Type.String({
				...PROFILE_NAME,
				description:
					"Start from this agent profile of the server config (`profiles`): its settings, with the fields given here winning (metadata is merged).",
			}),
		),
		...SessionConfigFields,
		metadata: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "Free-form string map." })),
		messages: Type.Optional(Type.Array(AgentMessageSchema, { description: "A transcript to start from." })),
		...CreateSessionToolFields,
	},
	{ additionalProperties: false, title: "CreateSessionBody" },
);

export const PatchSessionBody = Type.Object(
	{
		...SessionConfigFields,
		metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
		...CreateSessionToolFields,
	},
	{
		additionalProperties: false,
		title: "PatchSessionBody",
		description:
			"Fields to change (a field left out stays as it is). Model, system prompt and thinking level apply from the next model call, `toolApprovals` from the next tool call, the rest (`tools`, `clientTools`, modes) from the next run at the latest.",
	},
);

const Usage = Open(
	{
		input: Type.Number(),
		output: Type.Number(),
		cacheRead: Type.Number(),
		cacheWrite: Type.Number(),
		totalTokens: Type.Number(),
		cost: Open({ total: Type.Number() }),
	},
	"Token usage and cost in USD.",
	"Usage",
);

const QueuedView = Type.Object(
	{ id: Type.Integer(), message: AgentMessageSchema, createdAt: Type.Number() },
	{ title: "QueuedMessage" },
);

export const SessionView = Type.Object(
	{
		id: Type.String(),
		createdAt: Type.Number(),
		updatedAt: Type.Number(),
		model: Type.String(),
		systemPrompt: Type.String(),
		thinkingLevel: Type.String(),
		tools: Type.Array(Type.String(), { description: "The session's tool selectors, as configured" }),
		activeTools: Type.Array(Type.String(), {
			description:
				"Names of the tools the model is offered from the next run: the server tools `tools` selects, then client-side tools",
		}),
		toolExecution: Type.String(),
		steeringMode: Type.String(),
		followUpMode: Type.String(),
		onInterrupt: OnInterrupt,
		metadata: Type.Record(Type.String(), Type.String()),
		status: Type.Union([Type.Literal("idle"), Type.Literal("running"), Type.Literal("interrupted")]),
		interruptedAt: Type.Union([Type.Number(), Type.Null()]),
		runId: Type.Union([Type.String(), Type.Null()]),
		isStreaming: Type.Boolean(),
		pendingToolCalls: Type.Array(Type.String()),
		errorMessage: Type.Union([Type.String(), Type.Null()]),
		queue: Type.Object({
			steering: Type.Array(QueuedView),
			followUp: Type.Array(QueuedView),
			steeringCount: Type.Integer(),
			followUpCount: Type.Integer(),
		}),
		messageCount: Type.Integer(),
		lastEventId: Type.Integer({ description: "Id of the last event on the session's stream (0 before any)." }),
		usage: Usage,
		...SessionToolStateFields,
		...CompactionStateFields,
		...KeyBudgetStateFields,
	},
	{ additionalProperties: true, $id: "Session", description: "A session's config and live state." },
);

export const SessionSummary = Type.Object(
	{
		id: Type.String(),
		createdAt: Type.Number(),
		updatedAt: Type.Number(),
		lastActiveAt: Type.Number(),
		model: Type.String(),
		status: Type.String(),
		messageCount: Type.Integer(),
		metadata: Type.Record(Type.String(), Type.String()),
	},
	{ additionalProperties: false, title: "SessionSummary" },
);

export const SessionList = Type.Object(
	{
		sessions: Type.Array(SessionSummary),
		nextCursor: Type.Optional(Type.String({ description: "Pass as `cursor` for the next page; absent on the last." })),
	},
	{ title: "SessionList" },
);

/** Longest id a path parameter may carry (session and tool call ids); also the router's `maxParamLength`. */
export const MAX_ID_LENGTH = 200;

export const SessionParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH }) });

export const ListQuery = Type.Object(
	{
		cursor: Type.Optional(Type.String({ maxLength: 1000 })),
		limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
	},
	{ additionalProperties: false },
);

export const MessagesQuery = Type.Object(
	{
		offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
		limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
	},
	{ additionalProperties: false },
);

export const MessagePage = Type.Object(
	{
		messages: Type.Array(AgentMessageSchema),
		offset: Type.Integer(),
		total: Type.Integer(),
		nextOffset: Type.Optional(Type.Integer({ description: "Pass as `offset` for the next page; absent on the last." })),
	},
	{ title: "MessagePage" },
);

export const IfBusy = Type.Union(
	[Type.Literal("reject"), Type.Literal("steer"), Type.Literal("followUp"), Type.Literal("interrupt")],
	{
		title: "IfBusy",
		description:
			"While a run is active: `reject` (default) → 409 AGENT_BUSY; `steer` / `followUp` → queued, 202; `interrupt` → abort the run, then start this prompt.",
	},
);

export const PromptBody = Type.Object(
	{
		message: MessageInput,
		images: Type.Optional(Type.Array(ImageContent, { maxItems: 20 })),
		ifBusy: Type.Optional(IfBusy),
	},
	{ additionalProperties: false, title: "PromptBody" },
);

export const QueueBody = Type.Object(
	{ message: MessageInput, images: Type.Optional(Type.Array(ImageContent, { maxItems: 20 })) },
	{ additionalProperties: false, title: "QueueBody" },
);

export const IdempotencyHeaders = Type.Object({
	"idempotency-key": Type.Optional(
		Type.String({
			description:
				"1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`.",
		}),
	),
});

export const RunAccepted = Type.Object(
	{
		status: Type.Literal("started"),
		runId: Type.String(),
		firstEventId: Type.Integer({
			description: "Id of the run's `agent_start`: resume `/events` with `after = firstEventId - 1`.",
		}),
	},
	{ title: "RunAccepted", description: "The run started; follow it on GET /v1/sessions/:id/events." },
);

export const QueuedAccepted = Type.Object(
	{
		status: Type.Literal("queued"),
		queue: Type.Union([Type.Literal("steer"), Type.Literal("followUp")]),
		queuedId: Type.Integer(),
		queueLength: Type.Integer({ description: "Messages in that queue now, this one included." }),
		idle: Type.Boolean({ description: "True when no run is active: the message waits for the next run." }),
		note: Type.String(),
	},
	{ title: "QueuedAccepted", description: "The message is stored in the queue." },
);

export const SseResponse = {
	description: "With `Accept: text/event-stream`: the SSE stream of this run, `agent_start` to `agent_end`.",
	content: { "text/event-stream": { schema: Type.String() } },
};

export const ClearQueueQuery = Type.Object(
	{ kind: Type.Optional(Type.Union([Type.Literal("steer"), Type.Literal("followUp")])) },
	{ additionalProperties: false },
);

export const ClearQueueResult = Type.Object(
	{ cleared: Type.Integer(), steeringCount: Type.Integer(), followUpCount: Type.Integer() },
	{ title: "ClearQueueResult" },
);

export const AbortResult = Type.Object(
	{
		aborted: Type.Boolean({ description: "True when a run was active (it ends with its agent_end)." }),
		runId: Type.Union([Type.String(), Type.Null()]),
	},
	{ title: "AbortResult" },
);

export const EventsQuery = Type.Object(
	{
		after: Type.Optional(
			Type.String({ description: "Resume after this event id (same as the Last-Event-ID header, which wins)." }),
		),
		token: Type.Optional(
			Type.String({
				maxLength: 200,
				description:
					"A stream token from POST /v1/sessions/:id/stream-token, in place of the Authorization header (for EventSource). Checked when the stream opens.",
			}),
		),
	},
	{ additionalProperties: false },
);

export const ModelList = Type.Object(
	{
		defaultModel: Type.String(),
		models: Type.Array(
			Type.Object(
				{
					id: Type.String({ description: '`"provider/id"`' }),
					provider: Type.String(),
					modelId: Type.String(),
					name: Type.String(),
					api: Type.String(),
					reasoning: Type.Boolean(),
					input: Type.Array(Type.String()),
					contextWindow: Type.Number(),
					maxTokens: Type.Number(),
					cost: Open({}),
					standIn: Type.Boolean({ description: "True for faux/echo: a scripted stand-in, not an LLM." }),
					available: Type.Boolean({
						description:
							"Whether a session can use it: the stand-in, a model whose server needs no key, or one whose provider has a key configured (sessions are refused the others: MODEL_UNAVAILABLE).",
					}),
				},
				{ additionalProperties: false, title: "Model" },
			),
		),
	},
	{ title: "ModelList" },
);

export const ToolList = Type.Object(
	{
		tools: Type.Array(
			Open(
				{
					name: Type.String(),
					label: Type.String(),
					description: Type.String(),
					parameters: Open({}),
					origin: Type.String({ description: "Where the tool comes from: builtin, library, module, mcp, http, ..." }),
					idempotent: Type.Boolean({
						description:
							"Declared safe to run again with the same arguments: a call cut short by the death of the server process runs again when its session continues (otherwise the model gets an error result).",
					}),
				},
				undefined,
				"Tool",
			),
		),
	},
	{ title: "ToolList" },
);

export const Health = Type.Object(
	{
		status: Type.String(),
		/** On a 503: the parts that are down (`postgres`, `store`, ...). */
		unavailable: Type.Optional(Type.Array(Type.String())),
	},
	{ additionalProperties: true, title: "Health" },
);

/** Response map helper: `{ [status]: schema, 4xx/5xx: ErrorEnvelope }`. */
export function responses(ok: Record<number, TSchema | typeof SseResponse>): Record<string, unknown> {
	return { ...ok, ...errors };
}
