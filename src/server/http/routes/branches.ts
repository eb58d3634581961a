/**
 * The branching routes: `POST /v1/sessions/:id/fork` makes a new session from a session's
 * configuration and its transcript up to a message (src/server/runtime/session/branching.ts); rewind,
 * regenerate and the edit of a user message cut a session's own transcript, keeping what followed
 * as a superseded branch (src/server/runtime/session/rewind.ts), which `GET /v1/sessions/:id/branches`
 * lists. Each is an operation of the session port, and each takes an `Idempotency-Key`
 * (keyed-requests.ts): a repeat gets the first request's fork, cut or run.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { type Static, Type } from "@sinclair/typebox";
import type { ImageContent } from "../../../ai/types.js";
import type { SupersededBranch } from "../../../store/types.js";
import { forkSession } from "../../runtime/session/branching.js";
import type { PortRunOptions, SessionPort } from "../../runtime/session/port.js";
import { transcriptMessageId } from "../../runtime/session/transcript-cuts.js";
import { toUserMessage } from "../../runtime/session/user-message.js";
import { routePlugin } from "../plugins.js";
import {
	AgentMessageSchema,
	IdempotencyHeaders,
	ImageContent as ImageContentSchema,
	MessageInput,
	RunAccepted,
	responses,
	SessionParams,
	SessionView,
	SseResponse,
} from "../schemas.js";
import { answerRepeat, beginKeyed, startKeyedRun } from "./keyed-requests.js";

const MessageId = (description: string) => Type.String({ minLength: 1, maxLength: 40, description });

const ForkBody = Type.Object(
	{
		atMessageId: Type.Optional(
			MessageId(
				"The last message the fork keeps: `wh-<index>` of the transcript (`GET /v1/sessions/:id/messages` pages by that index). Default: the whole transcript.",
			),
		),
	},
	{ additionalProperties: false, title: "ForkBody" },
);

const RewindBody = Type.Object(
	{
		toMessageId: MessageId(
			"The last message the transcript keeps (`wh-<index>`); the messages after it become a superseded branch.",
		),
	},
	{ additionalProperties: false, title: "RewindBody" },
);

const EditParams = Type.Object(
	{ id: Type.String(), messageId: MessageId("The user message to replace (`wh-<index>`).") },
	{ additionalProperties: false },
);

const EditBody = Type.Object(
	{
		content: MessageInput,
		images: Type.Optional(Type.Array(ImageContentSchema, { maxItems: 20 })),
	},
	{ additionalProperties: false, title: "EditMessageBody" },
);

export const SupersededBranchView = Type.Object(
	{
		branch: Type.Integer({ description: "The session's rewinds in order: 1 for its first." }),
		fromMessageId: Type.String({
			description: "The id (`wh-<index>`) the branch's first message had; the live transcript was cut before it.",
		}),
		supersededAt: Type.Integer({ description: "When the rewind was stored (epoch ms)." }),
		messageCount: Type.Integer(),
		messages: Type.Array(AgentMessageSchema),
	},
	{ title: "SupersededBranch" },
);

const BranchList = Type.Object(
	{ branches: Type.Array(SupersededBranchView) },
	{ title: "SupersededBranchList", description: "The session's superseded branches, oldest first." },
);

const RewindResult = Type.Object(
	{
		runId: Type.String({ description: "The run that made the cut (it has no agent events)." }),
		messageCount: Type.Integer({ description: "The live transcript's length now." }),
		branch: SupersededBranchView,
	},
	{ title: "RewindResult" },
);

/** A superseded branch as the API shows it. */
export function branchView(branch: SupersededBranch): Static<typeof SupersededBranchView> {
	return {
		branch: branch.branch,
		fromMessageId: transcriptMessageId(branch.fromIndex),
		supersededAt: branch.supersededAt,
		messageCount: branch.messages.length,
		messages: branch.messages as unknown as { role: string }[],
	};
}

export const branchRoutes: FastifyPluginAsyncTypebox = routePlugin("wheelhouse-branches", async (app) => {
	const tags = ["sessions"];

	/** A repeated rewind's answer: the first one's, with its branch's messages read again. */
	async function rewoundAgain(
		session: SessionPort,
		outcome: { runId: string; messageCount: number; branch: number; fromIndex: number; supersededAt: number },
	) {
		const stored = outcome.branch > 0 ? (await session.branches()).find((b) => b.branch === outcome.branch) : undefined;
		const branch: SupersededBranch = stored ?? {
			branch: outcome.branch,
			fromIndex: outcome.fromIndex,
			supersededAt: outcome.supersededAt,
			messages: [],
		};
		return { runId: outcome.runId, messageCount: outcome.messageCount, branch: branchView(branch) };
	}

	app.post(
		"/v1/sessions/:id/fork",
		{
			schema: {
				tags,
				summary:
					"Fork a session: a new session with its configuration and its transcript up to a message (409 while it runs); the parent is unchanged",
				params: SessionParams,
				headers: IdempotencyHeaders,
				body: Type.Optional(ForkBody),
				response: responses({ 201: SessionView }),
			},
		},
		async function forkSessionRoute(request, reply) {
			const { sessions } = app.wheelhouse;
			const parent = await sessions.open(request.params.id, request.ownerId);
			const keyed = await beginKeyed(app, request, parent, "fork", request.body ?? {});
			if (keyed?.kind === "repeat") return answerRepeat(app, request, reply, parent, keyed.outcome);
			try {
				const fork = await forkSession({ sessions }, parent, request.ownerId, request.body?.atMessageId);
				const view = await fork.view();
				if (keyed?.kind === "first") await keyed.record({ kind: "response", status: 201, body: view });
				return reply.code(201).send(view);
			} finally {
				keyed?.release();
			}
		},
	);

	app.post(
		"/v1/sessions/:id/rewind",
		{
			schema: {
				tags,
				summary:
					"Rewind: the transcript ends with a message; what followed is kept as a superseded branch (409 while a run is active)",
				params: SessionParams,
				headers: IdempotencyHeaders,
				body: RewindBody,
				response: responses({ 200: RewindResult }),
			},
		},
		async function rewindSession(request, reply) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			const keyed = await beginKeyed(app, request, session, "rewind", request.body);
			if (keyed?.kind === "repeat") {
				reply.header("idempotent-replayed", "true");
				if (keyed.outcome.kind !== "rewound") return answerRepeat(app, request, reply, session, keyed.outcome);
				return rewoundAgain(session, keyed.outcome);
			}
			try {
				const { runId, messageCount, branch } = await session.rewind(request.body.toMessageId);
				if (keyed?.kind === "first") {
					await keyed.record({
						kind: "rewound",
						runId,
						messageCount,
						branch: branch.messages.length > 0 ? branch.branch : 0,
						fromIndex: branch.fromIndex,
						supersededAt: branch.supersededAt,
					});
				}
				return { runId, messageCount, branch: branchView(branch) };
			} finally {
				keyed?.release();
			}
		},
	);

	app.post(
		"/v1/sessions/:id/regenerate",
		{
			schema: {
				tags: ["runs"],
				summary:
					"Regenerate: supersede the answer to the last user message and answer it again (SSE with Accept: text/event-stream, else 202)",
				params: SessionParams,
				headers: IdempotencyHeaders,
				response: responses({ 200: SseResponse, 202: RunAccepted }),
			},
		},
		async function regenerate(request, reply) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			// regenerate takes no body: the operation alone is the request.
			const keyed = await beginKeyed(app, request, session, "regenerate", null);
			return startKeyedRun(app, request, reply, session, keyed, (options) => session.regenerate(options), true);
		},
	);

	app.patch(
		"/v1/sessions/:id/messages/:messageId",
		{
			schema: {
				tags: ["runs"],
				summary:
					"Edit a user message: the transcript is rewound to before it (it and what followed become a superseded branch), then prompted with the new content",
				params: EditParams,
				headers: IdempotencyHeaders,
				body: EditBody,
				response: responses({ 200: SseResponse, 202: RunAccepted }),
			},
		},
		async function editMessage(request, reply) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			const { messageId } = request.params;
			// The message edited is part of the request: the same key on another message is another request.
			const keyed = await beginKeyed(app, request, session, "edit", { messageId, ...request.body });
			const message = toUserMessage(request.body.content, request.body.images as ImageContent[] | undefined);
			const start = (options: PortRunOptions) => session.edit(messageId, message, options);
			return startKeyedRun(app, request, reply, session, keyed, start, true);
		},
	);

	app.get(
		"/v1/sessions/:id/branches",
		{
			schema: {
				tags,
				summary: "The superseded branches of a session: what rewinds, regenerates and edits took off its transcript",
				params: SessionParams,
				response: responses({ 200: BranchList }),
			},
		},
		async function listBranches(request) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			return { branches: (await session.branches()).map(branchView) };
		},
	);
});
