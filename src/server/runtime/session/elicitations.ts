/**
 * Elicitations of upstream MCP servers as pending interactions of a session: what the session
 * state and the `elicitation_requested` event show of one, and the check of a client's answer
 * against the schema the server requested (the same on the replica running the session and on
 * one that only stores the answer).
 *
 * A pending elicitation is stored as a `pending_interactions` row of kind `elicitation`, keyed by
 * its own id (`eli_…`); its payload's `args` hold the server, the tool call it came during, the
 * message and the requested schema.
 */
import { Type } from "@sinclair/typebox";
import {
	type ElicitationAnswer,
	type ElicitationSchema,
	elicitationContentProblems,
	type PendingRequest,
} from "../../../tools/index.js";
import { type SessionError, sessionError } from "./errors.js";

/** What a pending elicitation's `args` hold (written by `ToolInteractions.elicit`). */
export interface ElicitationArgs {
	server: string;
	toolCallId: string;
	message: string;
	requestedSchema: ElicitationSchema;
}

/** One pending elicitation in the session state (`pendingElicitations`) and in `elicitation_requested`. */
export const PendingElicitationView = Type.Object(
	{
		elicitationId: Type.String({ description: "Answer with POST /v1/sessions/:id/elicitations/:elicitationId" }),
		server: Type.String({ description: "The configured MCP server that asks" }),
		toolCallId: Type.String({ description: "The tool call during which the server asks" }),
		toolName: Type.String(),
		message: Type.String({ description: "The server's question, for the human" }),
		requestedSchema: Type.Unknown({
			description: "A flat JSON Schema object of primitive fields (string, number, integer, boolean, enum)",
		}),
		createdAt: Type.Number(),
		expiresAt: Type.Number({ description: "When the wait times out (epoch ms); the server then gets `cancel`" }),
		orphaned: Type.Optional(
			Type.Boolean({ description: "Left by a previous server process; can no longer be answered" }),
		),
	},
	{ title: "PendingElicitation" },
);

/** The public view of a pending elicitation. */
export function publicElicitation(request: PendingRequest) {
	const args = (request.args ?? {}) as Partial<ElicitationArgs>;
	return {
		elicitationId: request.toolCallId,
		server: args.server ?? "",
		toolCallId: args.toolCallId ?? "",
		toolName: request.toolName,
		message: args.message ?? "",
		requestedSchema: args.requestedSchema ?? { type: "object", properties: {} },
		createdAt: request.createdAt,
		expiresAt: request.expiresAt,
		...(request.orphaned ? { orphaned: true } : {}),
	};
}

/**
 * The refusal of an answer that does not fit: content with an action other than `accept`, or
 * accepted content that does not fit the requested schema (`VALIDATION_FAILED`, naming the field
 * as `body.content.<field>`). Undefined when the answer fits.
 */
export function elicitationAnswerError(
	args: Partial<ElicitationArgs> | undefined,
	answer: ElicitationAnswer,
): SessionError | undefined {
	if (answer.action !== "accept") {
		if (answer.content === undefined) return undefined;
		return sessionError(
			"VALIDATION_FAILED",
			`body.content: only an "accept" carries content (action is "${answer.action}")`,
		);
	}
	const schema = args?.requestedSchema ?? { type: "object", properties: {} };
	const problems = elicitationContentProblems(schema, answer.content).map((p) => `body.${p}`);
	if (problems.length === 0) return undefined;
	return sessionError("VALIDATION_FAILED", problems[0]!, { problems });
}

/** The `args` of a stored elicitation's payload. */
export function storedElicitationArgs(payload: string): Partial<ElicitationArgs> | undefined {
	try {
		const parsed = JSON.parse(payload) as { args?: Partial<ElicitationArgs> };
		return parsed.args;
	} catch {
		return undefined;
	}
}
