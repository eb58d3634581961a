/**
 * The client tool result route, and the answers shared by every route that resolves a waiting
 * call.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { ClientToolResultBodySchema } from "../../../tools/index.js";
import { apiError } from "../errors.js";
import { routePlugin } from "../plugins.js";
import { responses } from "../schemas.js";

export const ToolCallParams = Type.Object({
	id: Type.String({ minLength: 1, maxLength: 200 }),
	toolCallId: Type.String({ minLength: 1, maxLength: 200 }),
});

export const InteractionAccepted = Type.Object(
	{
		toolCallId: Type.String(),
		status: Type.Literal("accepted", { description: "Delivered to the waiting tool call; the run continues." }),
	},
	{ title: "InteractionAccepted" },
);

/** 404 / 409 for an answer that reaches no waiting call. */
export function answerRejected(
	kind: "result" | "decision",
	toolCallId: string,
	outcome: "unknown" | "finished" | "interrupted",
): never {
	if (outcome === "interrupted") {
		throw apiError(
			"TOOL_CALL_FINISHED",
			`Tool call ${toolCallId} no longer waits for a ${kind}: its run was interrupted by a server restart (see the session's run_interrupted event), and the call got an error result; the model may call the tool again when the session continues.`,
		);
	}
	if (outcome === "finished") {
		throw apiError(
			"TOOL_CALL_FINISHED",
			`Tool call ${toolCallId} no longer waits for a ${kind}: it was answered, timed out, or its run ended.`,
		);
	}
	throw apiError(
		"TOOL_CALL_NOT_FOUND",
		`No tool call ${toolCallId} of this session waits for a ${kind}; see pendingApprovals / pendingClientToolCalls in GET /v1/sessions/:id.`,
	);
}

/** `POST /v1/sessions/:id/tool-results/:toolCallId`: the result of a client-side tool call. */
export const toolResultRoutes: FastifyPluginAsyncTypebox = routePlugin("wheelhouse-tool-results", async (app) => {
	app.post(
		"/v1/sessions/:id/tool-results/:toolCallId",
		{
			schema: {
				summary:
					"Post the result of a client-side tool call (announced by tool_execution_start); 404 if no such call waits, 409 if it already ended",
				params: ToolCallParams,
				body: ClientToolResultBodySchema,
				response: responses({ 200: InteractionAccepted }),
			},
		},
		async function postToolResult(request) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			const { toolCallId } = request.params;
			const outcome = await session.resolve({ kind: "client_tool", toolCallId, value: request.body });
			if (outcome !== "resolved") answerRejected("result", toolCallId, outcome);
			return { toolCallId, status: "accepted" as const };
		},
	);
});
