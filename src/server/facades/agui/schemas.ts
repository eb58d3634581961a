/**
 * TypeBox schemas of the AG-UI routes. `RunAgentInput` is checked for what the facade reads (the
 * protocol's other fields are accepted and ignored); message contents are checked by the request
 * mapping (input.ts), which names the field at fault.
 */
import { Type } from "@sinclair/typebox";
import { TOOL_NAME_PATTERN } from "../../../tools/config.js";
import { MAX_ID_LENGTH, PROFILE_NAME, ThinkingLevel } from "../../http/schemas.js";
import { PROTOCOL_VERSION_PATTERN } from "./protocol.js";

const Open = (properties: Parameters<typeof Type.Object>[0], description?: string) =>
	Type.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) });

const Id = (description: string) => Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, description });

/** `forwardedProps.wheelhouse`: the session's settings, applied when no run is active. */
export const WheelhouseProps = Type.Object(
	{
		profile: Type.Optional(
			Type.String({
				...PROFILE_NAME,
				description:
					"An agent profile of the server config: its settings apply to the thread's session (the fields beside it win)",
			}),
		),
		model: Type.Optional(Type.String({ minLength: 1, description: '"provider/id" (see GET /v1/models)' })),
		thinkingLevel: Type.Optional(ThinkingLevel),
		tools: Type.Optional(
			Type.Array(Type.String({ minLength: 1 }), {
				maxItems: 256,
				description: 'Server tools of the thread\'s session (names or "prefix*"); default every server tool',
			}),
		),
	},
	{ additionalProperties: false, description: "Wheelhouse settings of the thread's session" },
);

export const RunAgentInputBody = Open(
	{
		threadId: Id("The conversation: a Wheelhouse session, created on the first run (or a session id, ses_...)"),
		runId: Id("The client's id of this run, echoed in RUN_STARTED and RUN_FINISHED"),
		parentRunId: Type.Optional(Type.String()),
		protocolVersion: Type.Optional(
			Type.String({
				pattern: PROTOCOL_VERSION_PATTERN,
				maxLength: 64,
				description:
					'The AG-UI protocol the client speaks (`@ag-ui/client` 1.0 sends "1.0"). Absent or below 1: events in the shape clients before 1.0 accept (no `RUN_FINISHED.outcome`, tool results as text)',
			}),
		),
		state: Type.Optional(Type.Unknown({ description: "Shared state: kept for the thread and shown to the model" })),
		messages: Type.Array(Open({ id: Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH }), role: Type.String() }), {
			description:
				"The whole conversation; what follows the last assistant message is new (user messages, tool results)",
		}),
		tools: Type.Optional(
			Type.Array(
				Open({
					name: Type.String({ pattern: TOOL_NAME_PATTERN, description: "1 to 64 letters, digits, _ or -" }),
					description: Type.String(),
					parameters: Type.Optional(Type.Unknown()),
				}),
				{ maxItems: 128, description: "Tools the client executes: a call ends the run with its id pending" },
			),
		),
		context: Type.Optional(
			Type.Array(Open({ description: Type.String(), value: Type.String() }), {
				description: "Shown to the model for this run",
			}),
		),
		forwardedProps: Type.Optional(Open({ wheelhouse: Type.Optional(WheelhouseProps) }, "Ignored but for `wheelhouse`")),
		resume: Type.Optional(
			Type.Array(Type.Unknown(), {
				maxItems: 0,
				description: "Not supported: this server sends no interrupts (approvals are CUSTOM events)",
			}),
		),
	},
	"An AG-UI RunAgentInput (protocol 1.0).",
);

export const ThreadParams = Type.Object({ threadId: Id("The thread (see RunAgentInput.threadId)") });

export const CatchUpQuery = Type.Object(
	{
		protocolVersion: Type.Optional(
			Type.String({
				pattern: PROTOCOL_VERSION_PATTERN,
				maxLength: 64,
				description:
					'The AG-UI protocol the client speaks; default "1.0". Below 1 (e.g. "0.0.59"): events in the shape clients before 1.0 accept',
			}),
		),
	},
	{ additionalProperties: false },
);

export const AguiStream = {
	description: "AG-UI events as Server-Sent Events: one `data:` line of JSON per event, as @ag-ui/client reads them.",
	content: { "text/event-stream": { schema: Type.String() } },
};
