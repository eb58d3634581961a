/**
 * The schemas of a session's settings: the fields `POST /v1/sessions`, `PATCH /v1/sessions/:id`
 * and agent profiles (profiles.ts) share, and an agent profile's name. The routes' schemas
 * (http/schemas.ts) build on these; a `title` names a shape in the OpenAPI document.
 */
import { Type } from "@sinclair/typebox";
import type { OnInterruptPolicy } from "../../store/types.js";
import { CompactionSessionFields } from "./compaction/settings.js";

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
