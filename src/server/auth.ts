/**
 * Bearer-token auth for `/v1`.
 *
 * With API keys configured every request whose path starts with `/v1` needs
 * `Authorization: Bearer <key>`; `/healthz`, `/readyz` and `/openapi.json` stay open. Keys are
 * compared in constant time: both sides are hashed with SHA-256 and compared with
 * `crypto.timingSafeEqual`, and every configured key is checked (no early exit), so neither the
 * key's length nor which key matched leaks through timing.
 *
 * The request gets `ownerId`: a short hash of the matching key (never the key itself), or `null`
 * when auth is off. Sessions are owned by the `ownerId` that created them.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { apiError } from "./errors.js";

declare module "fastify" {
	interface FastifyRequest {
		/** Hash id of the API key that authenticated the request; `null` when auth is off. */
		ownerId: string | null;
	}
}

function sha256(value: string): Buffer {
	return createHash("sha256").update(value).digest();
}

/** The owner id of an API key: the first 16 hex chars of its SHA-256 (safe to store and log). */
export function ownerIdOf(apiKey: string): string {
	return sha256(apiKey).toString("hex").slice(0, 16);
}

function isProtected(url: string): boolean {
	return url === "/v1" || url.startsWith("/v1/") || url.startsWith("/v1?");
}

/** Installs the auth hook on the root instance (so it covers routes registered by any plugin). */
export function installAuth(app: FastifyInstance, apiKeys: readonly string[]): void {
	app.decorateRequest("ownerId", null);
	if (apiKeys.length === 0) return;
	const keys = apiKeys.map((key) => ({ hash: sha256(key), ownerId: ownerIdOf(key) }));

	app.addHook("onRequest", async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
		if (!isProtected(request.url)) return;
		const header = request.headers.authorization;
		const match = typeof header === "string" ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
		if (!match) {
			throw apiError("UNAUTHORIZED", "Missing credentials: send the header `Authorization: Bearer <api key>`.");
		}
		const presented = sha256(match[1]);
		let ownerId: string | null = null;
		for (const key of keys) {
			if (timingSafeEqual(presented, key.hash)) ownerId = key.ownerId;
		}
		if (ownerId === null) throw apiError("UNAUTHORIZED", "The API key is not valid for this server.");
		request.ownerId = ownerId;
	});
}
