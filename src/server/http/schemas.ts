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
import { KeyBudgetStateFields } from "../runtime/budgets/schemas.js";
import { CompactionStateFields } from "../runtime/compaction/settings.js";
import { CreateSessionToolFields, SessionToolStateFields } from "../runtime/session/tool-interactions.js";
import {
	ModelSpec,
	OnInterrupt,
	PROFILE_NAME,
	QueueMode,
	SessionConfigFields,
	ThinkingLevel,
	ToolExecution,
} from "../runtime/session-config-schema.js";
import { ERROR_CODES } from "./errors.js";

// The session settings' schemas are the runtime's (agent profiles are checked with them too).
export { ModelSpec, OnInterrupt, PROFILE_NAME, QueueMode, SessionConfigFields, ThinkingLevel, ToolExecution };

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
		visibility: Type.Optional(
			Type.Union([Type.Literal("owner"), Type.Literal("tenant")], {
				description:
					'Who sees the session: `"owner"` (default) only its creator; `"tenant"` also everyone of the creator\'s tenant (the JWT\'s tenant claim, or the API key\'s `auth.keyTenants` entry). Others get 404 on every path.',
			}),
		),
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

/** Who sees a session besides its owner, and the owner's tenant (never the owner's credential). */
const SharingFields = {
	visibility: Type.Union([Type.Literal("owner"), Type.Literal("tenant")], {
		description: '`"owner"`: only its creator sees it; `"tenant"`: everyone of `tenant` too.',
	}),
	tenant: Type.Union([Type.String(), Type.Null()], {
		description: "The tenant of the session's owner when it was created; null without one.",
	}),
};

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
		...SharingFields,
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
		...SharingFields,
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

/** `GET /v1/sessions`: the page, and the filters (`metadata.<key>=<value>`, any number up to 8). */
export const SessionListQuery = Type.Object(
	{
		cursor: Type.Optional(Type.String({ maxLength: 1000 })),
		limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
		status: Type.Optional(
			Type.Union([Type.Literal("idle"), Type.Literal("running"), Type.Literal("interrupted")], {
				description: "Only sessions with this run status.",
			}),
		),
		profile: Type.Optional(
			Type.String({ minLength: 1, maxLength: 200, description: "Only sessions created from this agent profile." }),
		),
		updatedAfter: Type.Optional(
			Type.Integer({ minimum: 0, description: "Only sessions whose config changed after this time (epoch ms)." }),
		),
		updatedBefore: Type.Optional(
			Type.Integer({ minimum: 0, description: "Only sessions whose config last changed before this time (epoch ms)." }),
		),
	},
	{
		additionalProperties: false,
		patternProperties: {
			'^metadata\\.[^"\\\\]{1,100}$': Type.String({
				maxLength: 1000,
				description: "`metadata.<key>=<value>`: only sessions whose metadata has this pair.",
			}),
		},
	},
);

export const SessionParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH }) });

export const MessagesQuery = Type.Object(
	{
		offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
		limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
		includeSuperseded: Type.Optional(
			Type.Boolean({
				description:
					"Also list the superseded branches (what rewinds, regenerates and edits took off the transcript) as `superseded`, as `GET /v1/sessions/:id/branches` does.",
			}),
		),
	},
	{ additionalProperties: false },
);

export const MessagePage = Type.Object(
	{
		messages: Type.Array(AgentMessageSchema),
		offset: Type.Integer(),
		total: Type.Integer(),
		nextOffset: Type.Optional(Type.Integer({ description: "Pass as `offset` for the next page; absent on the last." })),
		superseded: Type.Optional(
			Type.Array(
				Type.Object({
					branch: Type.Integer(),
					fromMessageId: Type.String(),
					supersededAt: Type.Integer(),
					messageCount: Type.Integer(),
					messages: Type.Array(AgentMessageSchema),
				}),
				{ description: "With `includeSuperseded=true`: the superseded branches, oldest first." },
			),
		),
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

export const RunWaiting = Type.Object(
	{
		status: Type.Literal("waiting"),
		queued: Type.Literal(true),
		position: Type.Integer({
			description: "1 + the runs of your tenant (of your API key or user without one) waiting ahead of this one.",
		}),
		admissionId: Type.Integer(),
		note: Type.String(),
	},
	{
		title: "RunWaiting",
		description:
			'Your tenant or API key has every run slot taken (`auth.admission: "queue"`): the run is stored and starts when a slot frees. Follow it on GET /v1/sessions/:id/events: `run_queued`, then its `agent_start`.',
	},
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
				maxLength: 2048,
				description:
					"A stream token from POST /v1/sessions/:id/stream-token, or a client token with the `read` scope from POST /v1/tokens, in place of the Authorization header (for EventSource). Checked when the stream opens.",
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
