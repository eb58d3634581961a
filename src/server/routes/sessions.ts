import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { AgentMessage } from "../../agent/types.js";
import type { SessionConfig } from "../../store/types.js";
import { profileNamed, profileSettings } from "../profiles.js";
import {
	CreateSessionBody,
	ListQuery,
	MessagePage,
	MessagesQuery,
	PatchSessionBody,
	responses,
	SessionList,
	SessionParams,
	SessionView,
} from "../schemas.js";

/** Session CRUD and the transcript: `/v1/sessions`, `/v1/sessions/:id`, `/v1/sessions/:id/messages`. */
export const sessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
	const tags = ["sessions"];

	app.post(
		"/v1/sessions",
		{
			schema: { tags, summary: "Create a session", body: CreateSessionBody, response: responses({ 201: SessionView }) },
		},
		async function createSession(request, reply) {
			const { profile, ...body } = request.body ?? {};
			const base =
				profile === undefined ? {} : profileSettings(profile, profileNamed(app.wheelhouse.profiles, profile));
			const session = await app.wheelhouse.sessions.create(request.ownerId, {
				...base,
				...(body as Partial<SessionConfig>),
				...(base.metadata ? { metadata: { ...base.metadata, ...body.metadata } } : {}),
				messages: body.messages as AgentMessage[] | undefined,
			});
			return reply.code(201).send(session.view());
		},
	);

	app.get(
		"/v1/sessions",
		{
			schema: {
				tags,
				summary: "List sessions (oldest first, cursor pagination)",
				querystring: ListQuery,
				response: responses({ 200: SessionList }),
			},
		},
		async function listSessions(request) {
			const page = await app.wheelhouse.sessions.list(request.ownerId, request.query.cursor, request.query.limit ?? 50);
			return {
				sessions: page.sessions.map((s) => ({
					id: s.id,
					createdAt: s.createdAt,
					updatedAt: s.updatedAt,
					lastActiveAt: s.lastActiveAt,
					model: s.model,
					status: s.status,
					messageCount: s.messageCount,
					metadata: s.metadata,
				})),
				...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
			};
		},
	);

	app.get(
		"/v1/sessions/:id",
		{
			schema: {
				tags,
				summary: "A session's config and live state",
				params: SessionParams,
				response: responses({ 200: SessionView }),
			},
		},
		async function getSession(request) {
			return (await app.wheelhouse.sessions.load(request.params.id, request.ownerId)).view();
		},
	);

	app.patch(
		"/v1/sessions/:id",
		{
			schema: {
				tags,
				summary:
					"Change a session's config, client tools and approval policies (stored; applies from the next run at the latest)",
				params: SessionParams,
				body: PatchSessionBody,
				response: responses({ 200: SessionView }),
			},
		},
		async function patchSession(request) {
			const { sessions } = app.wheelhouse;
			const session = await sessions.load(request.params.id, request.ownerId);
			await sessions.update(session, request.body as Partial<SessionConfig>);
			// Stored: a run on another replica takes it in now.
			if (app.wheelhouse.cluster && !session.isBusy) await app.wheelhouse.cluster.send({ t: "config", s: session.id });
			return session.view();
		},
	);

	app.delete(
		"/v1/sessions/:id",
		{
			schema: {
				tags,
				summary: "Abort the session's run, then delete it and everything of it",
				params: SessionParams,
				response: responses({ 200: Type.Object({ deleted: Type.Boolean(), id: Type.String() }) }),
			},
		},
		async function deleteSession(request) {
			const { sessions } = app.wheelhouse;
			const session = await sessions.load(request.params.id, request.ownerId);
			await sessions.delete(session);
			// Deleted from the store: the replica running it aborts the run and ends its streams.
			await app.wheelhouse.cluster?.send({ t: "delete", s: session.id });
			return { deleted: true, id: session.id };
		},
	);

	app.get(
		"/v1/sessions/:id/messages",
		{
			schema: {
				tags,
				summary: "The transcript, paginated by offset",
				params: SessionParams,
				querystring: MessagesQuery,
				response: responses({ 200: MessagePage }),
			},
		},
		async function listMessages(request) {
			const { sessions } = app.wheelhouse;
			const session = await sessions.load(request.params.id, request.ownerId);
			const offset = request.query.offset ?? 0;
			const limit = request.query.limit ?? 100;
			const page = (await session.store.listMessages(session.id, { offset, limit })) ?? {
				messages: [],
				offset,
				total: 0,
			};
			const next = page.offset + page.messages.length;
			return {
				messages: page.messages as unknown as { role: string }[],
				offset: page.offset,
				total: page.total,
				...(next < page.total ? { nextOffset: next } : {}),
			};
		},
	);
};
