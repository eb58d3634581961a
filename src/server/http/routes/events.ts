/**
 * The session event stream route and the parsing of its resume cursor.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { apiError } from "../errors.js";
import { routePlugin } from "../plugins.js";
import { EventsQuery, responses, SessionParams, SseResponse } from "../schemas.js";
import { sseSink } from "../sse/open.js";

/** Parses a resume cursor: a non-negative integer, else 400 `INVALID_EVENT_ID`. */
export function parseEventId(raw: string, source: string): number {
	const value = raw.trim();
	if (!/^\d{1,15}$/.test(value)) {
		throw apiError(
			"INVALID_EVENT_ID",
			`${source} must be a non-negative integer event id (the id: of an event of this session); got ${JSON.stringify(raw.slice(0, 40))}.`,
		);
	}
	return Number(value);
}

/**
 * `GET /v1/sessions/:id/events`: the session's resumable live stream. Besides the bearer key it
 * accepts a stream token in `?token=` (auth.ts checks it), the one way `EventSource` can authenticate.
 */
export const eventRoutes: FastifyPluginAsyncTypebox = routePlugin("wheelhouse-events", async (app) => {
	app.get(
		"/v1/sessions/:id/events",
		{
			config: { streamToken: true },
			schema: {
				tags: ["events"],
				summary:
					"The session's SSE stream: after Last-Event-ID (or ?after=) replays the retained events then goes live; without, a session_snapshot first",
				params: SessionParams,
				querystring: EventsQuery,
				response: responses({ 200: SseResponse }),
			},
		},
		async function sessionEvents(request, reply) {
			const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
			const header = request.headers["last-event-id"];
			let afterId: number | undefined;
			if (typeof header === "string" && header.trim() !== "") afterId = parseEventId(header, "Last-Event-ID");
			else if (request.query.after !== undefined) afterId = parseEventId(request.query.after, "query.after");
			app.wheelhouse.streamSlots.hold(request.ownerId, session.id, reply.raw);
			await session.streamEvents(sseSink(reply, app.wheelhouse.stream), afterId);
			return reply;
		},
	);
});
