/**
 * The elicitation route: a client answers the question an upstream MCP server asked during one of
 * the session's tool calls (announced by `elicitation_requested`); the answer goes back to the
 * MCP server and the call goes on.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { apiError } from "../errors.js";
import { routePlugin } from "../plugins.js";
import { responses } from "../schemas.js";

export const ElicitationParams = Type.Object({
	id: Type.String({ minLength: 1, maxLength: 200 }),
	elicitationId: Type.String({ minLength: 1, maxLength: 200 }),
});

export const ElicitationAnswerBody = Type.Object(
	{
		action: Type.Union([Type.Literal("accept"), Type.Literal("decline"), Type.Literal("cancel")], {
			description: '"accept" sends `content`; "decline" says no; "cancel" dismisses the question',
		}),
		content: Type.Optional(
			Type.Record(
				Type.String(),
				Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Array(Type.String())]),
				{
					description:
						'With "accept": a value per field of the requested schema, checked against it (400 naming the field when one does not fit)',
				},
			),
		),
	},
	{ additionalProperties: false, title: "ElicitationAnswer" },
);

export const ElicitationAccepted = Type.Object(
	{
		elicitationId: Type.String(),
		status: Type.Literal("accepted", { description: "Delivered to the MCP server; the tool call goes on." }),
	},
	{ title: "ElicitationAccepted" },
);

/** 404 / 409 for an answer that reaches no waiting elicitation. */
function answerRejected(elicitationId: string, outcome: "unknown" | "finished" | "interrupted"): never {
	if (outcome === "interrupted") {
		throw apiError(
			"ELICITATION_INTERRUPTED",
			`Elicitation ${elicitationId} can no longer be answered: the server restarted while it waited, and the MCP server's request ended with the process that received it (an upstream MCP call cannot be resumed). The tool call got an error result; the model may call the tool again when the session continues.`,
		);
	}
	if (outcome === "finished") {
		throw apiError(
			"ELICITATION_FINISHED",
			`Elicitation ${elicitationId} no longer waits: it was answered, timed out, or its tool call ended.`,
		);
	}
	throw apiError(
		"ELICITATION_NOT_FOUND",
		`No elicitation ${elicitationId} of this session waits for an answer; see pendingElicitations in GET /v1/sessions/:id.`,
	);
}

/** `POST /v1/sessions/:id/elicitations/:elicitationId`. */
export const elicitationRoutes: FastifyPluginAsyncTypebox = routePlugin("wheelhouse-elicitations", async (app) => {
	app.post(
		"/v1/sessions/:id/elicitations/:elicitationId",
		{
			schema: {
				summary:
					"Answer an upstream MCP server's question (announced by elicitation_requested): accept with content that fits the requested schema, decline, or cancel",
				params: ElicitationParams,
				body: ElicitationAnswerBody,
				response: responses({ 200: ElicitationAccepted }),
			},
		},
		async function postElicitation(request) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			const { elicitationId } = request.params;
			const outcome = await session.resolve({ kind: "elicitation", toolCallId: elicitationId, value: request.body });
			if (outcome !== "resolved") answerRejected(elicitationId, outcome);
			return { elicitationId, status: "accepted" as const };
		},
	);
});
