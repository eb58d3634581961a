/**
 * Who is calling: the principal auth found for a request, and the owner ids sessions are stored
 * under.
 *
 * An owner id is what the store keeps in a session's `owner_id` and what per-caller limits, budgets
 * and usage are keyed by. It never holds a credential:
 * - an API key: the first 16 hex characters of its SHA-256 (unchanged by giving the key a tenant);
 * - a JWT caller: `jwt-` + 16 hex characters of the SHA-256 of issuer, tenant and subject, then,
 *   when it has a tenant, `~` + the tenant in base64url. The tenant is part of the id because a
 *   session belongs to subject and tenant together (one person in two organisations is two
 *   owners), and written into it so that the tenant of any owner id is known without a lookup.
 *   The id has no `.` (stream tokens split on it) and is URL-safe.
 */
import { createHash } from "node:crypto";
import type { Caller } from "../../../store/index.js";
import type { ClientScope } from "./client-scopes.js";

/** The authenticated caller of a request. */
export interface Principal {
	/** How it authenticated: an API key, a JWT, or a client token (acting for whoever minted it). */
	kind: "key" | "jwt" | "client-token";
	ownerId: string;
	/** For logs and spans: the JWT subject; for an API key `key:<owner id>`. Never a credential. */
	subject: string;
	tenant: string | null;
	/** The scopes of the JWT (`scope`/`scp`); empty for others. */
	scopes: readonly string[];
	/** A JWT's expiry (ms since the epoch): a client token it mints expires no later. */
	expiresAt?: number;
	/** A client token's limits: the one session it opens and what it may do there. */
	session?: { id: string; scopes: readonly ClientScope[] };
}

const JWT_PREFIX = "jwt-";
const HASH_LENGTH = 16;

/** The owner id of a JWT caller (see the module comment). */
export function jwtOwnerId(issuer: string, tenant: string | null, subject: string): string {
	const hash = createHash("sha256")
		// JSON: no choice of separators lets one (tenant, subject) pair spell another.
		.update(JSON.stringify([issuer, tenant, subject]))
		.digest("hex")
		.slice(0, HASH_LENGTH);
	return tenant === null ? `${JWT_PREFIX}${hash}` : `${JWT_PREFIX}${hash}~${Buffer.from(tenant).toString("base64url")}`;
}

/**
 * The tenants of owner ids: JWT callers' come from the id itself, API keys' from `keyTenants`
 * (tenant by owner id). One per app.
 */
export class Tenants {
	constructor(private readonly byKeyOwner: ReadonlyMap<string, string> = new Map()) {}

	/** The tenant of `ownerId`, or null when it has none. */
	of(ownerId: string): string | null {
		if (ownerId.startsWith(JWT_PREFIX)) {
			const mark = JWT_PREFIX.length + HASH_LENGTH;
			return ownerId.charAt(mark) === "~" ? Buffer.from(ownerId.slice(mark + 1), "base64url").toString() : null;
		}
		return this.byKeyOwner.get(ownerId) ?? null;
	}

	/** The caller the visibility rule takes (store/visibility.ts); `null` when auth is off. */
	callerOf(ownerId: string | null): Caller | null {
		return ownerId === null ? null : { ownerId, tenant: this.of(ownerId) };
	}
}
