import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { responses } from "../schemas.js";
import type { ToolInteractions } from "../session/tool-interactions.js";
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
export const approvalRoutes: FastifyPluginAsyncTypebox<{ interactions: ToolInteractions }> = async (app, opts) => {
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
			const session = await app.wheelhouse.sessions.load(request.params.id, request.ownerId);
			const { toolCallId } = request.params;
			const { approve, reason } = request.body;
			const decision = { approve, ...(reason !== undefined ? { reason } : {}) };
			const { cluster } = app.wheelhouse;
			// No run here: the call waits on the replica running the session, if any.
			const outcome =
				cluster && !session.isBusy
					? await cluster.resolve(session, "approval", toolCallId, decision)
					: opts.interactions.resolveApproval(session, toolCallId, decision);
			if (outcome !== "resolved") answerRejected("decision", toolCallId, outcome);
			return { toolCallId, status: "accepted" as const };
		},
	);
};
