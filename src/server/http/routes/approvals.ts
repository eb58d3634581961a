/**
 * The approval route: a client approves or denies a tool call that waits for its decision.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { routePlugin } from "../plugins.js";
import { responses } from "../schemas.js";
import { answerRejected, InteractionAccepted, ToolCallParams } from "./tool-results.js";

export const ApprovalBody = Type.Object(
	{
		approve: Type.Boolean({ description: "true runs the tool; false blocks it" }),
		reason: Type.Optional(
			Type.String({ maxLength: 2000, description: "Shown to the model with a denial (and logged with an approval)" }),
		),
	},
	{ additionalProperties: false, title: "ApprovalDecision" },
);

/** `POST /v1/sessions/:id/approvals/:toolCallId`: approve or deny a call announced by `approval_requested`. */
export const approvalRoutes: FastifyPluginAsyncTypebox = routePlugin("wheelhouse-approvals", async (app) => {
	app.post(
		"/v1/sessions/:id/approvals/:toolCallId",
		{
			schema: {
				summary:
					"Approve or deny a tool call announced by approval_requested; a denial's reason is the error result the model sees",
				params: ToolCallParams,
				body: ApprovalBody,
				response: responses({ 200: InteractionAccepted }),
			},
		},
		async function postApproval(request) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			const { toolCallId } = request.params;
			const { approve, reason } = request.body;
			const decision = { approve, ...(reason !== undefined ? { reason } : {}) };
			const outcome = await session.resolve({ kind: "approval", toolCallId, value: decision });
			if (outcome !== "resolved") answerRejected("decision", toolCallId, outcome);
			return { toolCallId, status: "accepted" as const };
		},
	);
});
