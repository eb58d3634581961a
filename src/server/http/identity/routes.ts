/**
 * `POST /v1/tokens`: mints a client token (identity/client-tokens.ts) for one session the caller may
 * see, with the scopes it asks for, for a browser to hold instead of the caller's key or login.
 * `GET /v1/me`: who the server takes the caller for (a page shows who is signed in).
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import { apiError } from "../errors.js";
import { routePlugin } from "../plugins.js";
import { MAX_ID_LENGTH, responses } from "../schemas.js";
import { STREAM_TOKEN_PARAM } from "../stream-token.js";
import { CLIENT_SCOPES } from "./client-scopes.js";
import type { ClientTokens } from "./client-tokens.js";

const Scope = Type.Union(
	CLIENT_SCOPES.map((s) => Type.Literal(s)),
	{
		description:
			"`read`: the session, its messages and events; `write`: prompt, continue, steer, follow-up, abort, clear the queue, client tool results; `approve`: tool approvals.",
	},
);

export const MintClientTokenBody = Type.Object(
	{
		sessionId: Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, description: "The one session the token opens." }),
		scopes: Type.Array(Scope, { minItems: 1, maxItems: 3, uniqueItems: true }),
		ttlSeconds: Type.Optional(
			Type.Integer({
				minimum: 1,
				description:
					"Lifetime; capped by `auth.clientTokenTtlMs` (default 15 minutes) and by the minting JWT's expiry.",
			}),
		),
	},
	{ additionalProperties: false, title: "MintClientTokenBody" },
);

export const ClientToken = Type.Object(
	{
		token: Type.String({
			description: "Send as `Authorization: Bearer <token>`, or as `?token=` on the session's event stream.",
		}),
		sessionId: Type.String(),
		scopes: Type.Array(Scope),
		expiresAt: Type.Integer({ description: "Milliseconds since the epoch after which the token opens nothing." }),
		eventsUrl: Type.String({ description: "The session's events path with the token, ready for `new EventSource()`." }),
	},
	{ additionalProperties: false, title: "ClientToken" },
);

export const Identity = Type.Object(
	{
		kind: Type.Union([Type.Literal("key"), Type.Literal("jwt"), Type.Literal("none")], {
			description: "How the caller authenticated; `none` when the server has no auth.",
		}),
		subject: Type.Union([Type.String(), Type.Null()], {
			description: "The JWT's subject, or `key:<owner id>` for an API key; null without auth.",
		}),
		tenant: Type.Union([Type.String(), Type.Null()], { description: "The caller's tenant, if it has one." }),
		ownerId: Type.Union([Type.String(), Type.Null()], {
			description: "The owner id its sessions are stored under (never a credential).",
		}),
		scopes: Type.Array(Type.String(), { description: "The JWT's scopes; empty for an API key." }),
		expiresAt: Type.Optional(Type.Integer({ description: "When the JWT expires (ms since the epoch)." })),
	},
	{ additionalProperties: false, title: "Identity" },
);

export const clientTokenRoutes: FastifyPluginAsyncTypebox<{ tokens: ClientTokens }> = routePlugin(
	"wheelhouse-client-tokens",
	async (app, opts) => {
		app.get(
			"/v1/me",
			{
				schema: {
					tags: ["auth"],
					summary: "Who the server takes the caller for: subject, tenant, how it authenticated",
					response: responses({ 200: Identity }),
				},
			},
			async function whoAmI(request) {
				const p = request.principal;
				if (!p) return { kind: "none" as const, subject: null, tenant: null, ownerId: null, scopes: [] };
				// A client token opens no such route (client-scopes.ts): `p.kind` is a key or a JWT here.
				return {
					kind: p.kind === "jwt" ? ("jwt" as const) : ("key" as const),
					subject: p.subject,
					tenant: p.tenant,
					ownerId: p.ownerId,
					scopes: [...p.scopes],
					...(p.expiresAt !== undefined ? { expiresAt: p.expiresAt } : {}),
				};
			},
		);

		app.post(
			"/v1/tokens",
			{
				schema: {
					tags: ["auth"],
					summary: "Mint a short-lived client token for one session with scopes (for a browser)",
					body: MintClientTokenBody,
					response: responses({ 201: ClientToken }),
				},
			},
			async function mintClientToken(request, reply) {
				const { sessionId, scopes, ttlSeconds } = request.body;
				// Visible to the caller, or 404 as for every other path.
				const session = await app.wheelhouse.sessions.open(sessionId, request.ownerId);
				if (!opts.tokens.canMint(request.principal)) {
					throw apiError(
						"FORBIDDEN",
						"Client tokens for callers signed in with a JWT need `auth.clientTokenSecret` in the server config.",
					);
				}
				const minted = opts.tokens.mint(
					request.principal,
					session.id,
					scopes,
					ttlSeconds === undefined ? undefined : ttlSeconds * 1000,
				);
				const path = `/v1/sessions/${encodeURIComponent(session.id)}/events`;
				return reply.code(201).send({
					token: minted.token,
					sessionId: session.id,
					scopes,
					expiresAt: minted.expiresAt,
					eventsUrl: `${path}?${STREAM_TOKEN_PARAM}=${encodeURIComponent(minted.token)}`,
				});
			},
		);
	},
);
