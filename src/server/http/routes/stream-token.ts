/**
 * `POST /v1/sessions/:id/stream-token`: mints a short-lived token that opens this session's event
 * stream (`GET /v1/sessions/:id/events?token=`) without an `Authorization` header, for browsers'
 * `EventSource`. Only a caller that may read the session gets one (the route needs the key).
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { routePlugin } from "../plugins.js";
import { responses, SessionParams } from "../schemas.js";
import { STREAM_TOKEN_PARAM, type StreamTokens } from "../stream-token.js";

export const StreamToken = Type.Object(
	{
		token: Type.String({ description: "Pass as `?token=` to GET /v1/sessions/:id/events of this session only." }),
		expiresAt: Type.Integer({
			description:
				"Milliseconds since the epoch after which the token opens no stream (a stream already open stays open).",
		}),
		eventsUrl: Type.String({ description: "The session's events path with the token, ready for `new EventSource()`." }),
	},
	{ additionalProperties: false, title: "StreamToken" },
);

export const streamTokenRoutes: FastifyPluginAsyncTypebox<{ tokens: StreamTokens }> = routePlugin(
	"wheelhouse-stream-tokens",
	async (app, opts) => {
		app.post(
			"/v1/sessions/:id/stream-token",
			{
				schema: {
					tags: ["events"],
					summary:
						"Mint a short-lived token that opens this session's event stream with ?token= instead of the Authorization header (for EventSource)",
					params: SessionParams,
					response: responses({ 200: StreamToken }),
				},
			},
			async function mintStreamToken(request) {
				// Visible to the caller, or 404; nothing is loaded for it (its port reads the store).
				const session = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
				const { token, expiresAt } = opts.tokens.mint(session.id, request.ownerId);
				const path = `/v1/sessions/${encodeURIComponent(session.id)}/events`;
				return { token, expiresAt, eventsUrl: `${path}?${STREAM_TOKEN_PARAM}=${encodeURIComponent(token)}` };
			},
		);
	},
);
