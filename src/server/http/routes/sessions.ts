/**
 * The session routes: create, list, read, change and delete sessions, and page through a
 * transcript.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { AgentMessage } from "../../../agent/types.js";
import { MAX_FILTER_METADATA } from "../../../store/session-filter.js";
import type { SessionConfig, SessionFilter } from "../../../store/types.js";
import { PROFILE_METADATA_KEY, profileNamed, profileSettings } from "../../runtime/profiles.js";
import { apiError } from "../errors.js";
import { routePlugin } from "../plugins.js";
import {
	CreateSessionBody,
	MessagePage,
	MessagesQuery,
	PatchSessionBody,
	responses,
	SessionList,
	SessionListQuery,
	SessionParams,
	SessionView,
} from "../schemas.js";
import { branchView } from "./branches.js";

/** The list's filter from its query: `status`, `profile`, `metadata.<key>=…`, `updatedAfter`/`updatedBefore`. */
function sessionFilterOf(query: Record<string, unknown>): SessionFilter | undefined {
	const metadata: Record<string, string> = {};
	for (const [name, value] of Object.entries(query)) {
		if (name.startsWith("metadata.") && typeof value === "string") metadata[name.slice("metadata.".length)] = value;
	}
	if (typeof query.profile === "string") metadata[PROFILE_METADATA_KEY] = query.profile;
	if (Object.keys(metadata).length > MAX_FILTER_METADATA) {
		throw apiError(
			"VALIDATION_FAILED",
			`querystring: at most ${MAX_FILTER_METADATA} metadata.<key> filters (profile counts as one).`,
		);
	}
	const filter: SessionFilter = {
		...(query.status !== undefined ? { status: query.status as SessionFilter["status"] } : {}),
		...(typeof query.updatedAfter === "number" ? { updatedAfter: query.updatedAfter } : {}),
		...(typeof query.updatedBefore === "number" ? { updatedBefore: query.updatedBefore } : {}),
		...(Object.keys(metadata).length > 0 ? { metadata } : {}),
	};
	return Object.keys(filter).length > 0 ? filter : undefined;
}

/** Session CRUD and the transcript: `/v1/sessions`, `/v1/sessions/:id`, `/v1/sessions/:id/messages`. */
export const sessionRoutes: FastifyPluginAsyncTypebox = routePlugin("wheelhouse-sessions", async (app) => {
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
			return reply.code(201).send(await session.view());
		},
	);

	app.get(
		"/v1/sessions",
		{
			schema: {
				tags,
				summary:
					"List sessions (oldest first, cursor pagination), filtered by `status`, `profile`, `metadata.<key>`, `updatedAfter`/`updatedBefore`",
				querystring: SessionListQuery,
				response: responses({ 200: SessionList }),
			},
		},
		async function listSessions(request) {
			const page = await app.wheelhouse.sessions.list(
				request.ownerId,
				request.query.cursor,
				request.query.limit ?? 50,
				sessionFilterOf(request.query),
			);
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
					visibility: s.visibility,
					tenant: s.tenant,
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
			return (await app.wheelhouse.sessions.open(request.params.id, request.ownerId)).view();
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
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			return session.patch(request.body as Partial<SessionConfig>);
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
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			await session.delete();
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
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			const page = await session.messages(request.query.offset ?? 0, request.query.limit ?? 100);
			const next = page.offset + page.messages.length;
			return {
				messages: page.messages as unknown as { role: string }[],
				offset: page.offset,
				total: page.total,
				...(next < page.total ? { nextOffset: next } : {}),
				...(request.query.includeSuperseded ? { superseded: (await session.branches()).map(branchView) } : {}),
			};
		},
	);
});
