/**
 * Client tokens: short-lived credentials for one session with a few scopes, minted by a caller
 * (`POST /v1/tokens`) for a browser to hold instead of its key or its identity provider's token.
 *
 * A token is `whct_<payload>.<mac>`: the payload (base64url JSON) names the session, the owner it
 * acts for (its minter), the minter's tenant, the scopes and the expiry; the mac is an HMAC-SHA256
 * of the payload. Nothing is stored, so a token works on every replica configured alike, and:
 * - one minted with an API key is signed with a secret derived from that key: removing the key
 *   from `WHEELHOUSE_API_KEYS` revokes it;
 * - one minted with a JWT is signed with `auth.clientTokenSecret`, and expires no later than the
 *   JWT that minted it; changing the secret revokes all of them.
 * Its lifetime is short (`auth.clientTokenTtlMs`, default 15 minutes) because nothing else revokes
 * it. What it opens is client-scopes.ts's table, on its one session; the session is checked for
 * visibility to the minter on every use, as the minter's own requests are.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { CLIENT_SCOPES, type ClientScope } from "./client-scopes.js";
import type { Principal } from "./principal.js";

export const CLIENT_TOKEN_PREFIX = "whct_";
const LABEL = "wheelhouse client token v1";
/** Longer than any token minted here (a session id, an owner id with a tenant, three scopes). */
const MAX_TOKEN_LENGTH = 2048;

interface Payload {
	/** Session id. */
	s: string;
	/** Owner id of the minter. */
	o: string;
	/** The minter's tenant. */
	t: string | null;
	/** Scopes. */
	c: ClientScope[];
	/** Expiry, ms since the epoch. */
	e: number;
	/** Who signed it: `k` a key-derived secret, `j` the configured secret. */
	k: "k" | "j";
}

/** A freshly minted token. */
export interface MintedClientToken {
	token: string;
	expiresAt: number;
}

/** Mints and verifies the client tokens of one app. */
export class ClientTokens {
	/** HMAC key per API-key owner id. */
	private readonly keySecrets = new Map<string, Buffer>();
	private readonly jwtSecret: Buffer | undefined;
	/** Auth off: tokens are minted (so clients work alike) but never checked. */
	private readonly openSecret = randomBytes(32);

	constructor(
		keys: ReadonlyArray<{ apiKey: string; ownerId: string }>,
		jwtSecret: string | undefined,
		readonly ttlMs: number,
	) {
		for (const { apiKey, ownerId } of keys) this.keySecrets.set(ownerId, derive(apiKey));
		this.jwtSecret = jwtSecret === undefined ? undefined : derive(jwtSecret);
	}

	/** True when `principal` can mint (a JWT caller needs `auth.clientTokenSecret`; `null`: auth is off). */
	canMint(principal: Principal | null): boolean {
		if (principal === null) return true;
		return principal.kind === "key"
			? this.keySecrets.has(principal.ownerId)
			: principal.kind === "jwt" && !!this.jwtSecret;
	}

	/**
	 * A token for `sessionId` with `scopes`, acting for `principal` (the caller checked that it may
	 * see the session and {@link canMint}). `ttlMs` is capped by the configured lifetime and by a
	 * JWT's own expiry.
	 */
	mint(
		principal: Principal | null,
		sessionId: string,
		scopes: readonly ClientScope[],
		ttlMs?: number,
		now = Date.now(),
	): MintedClientToken {
		const signedBy = principal?.kind === "key" ? "k" : "j";
		const secret =
			principal === null ? this.openSecret : signedBy === "k" ? this.keySecrets.get(principal.ownerId) : this.jwtSecret;
		if (!secret) throw new TypeError("ClientTokens.mint: check canMint(principal) first");
		const expiresAt = Math.min(
			now + Math.min(ttlMs ?? this.ttlMs, this.ttlMs),
			principal?.expiresAt ?? Number.MAX_SAFE_INTEGER,
		);
		const payload: Payload = {
			s: sessionId,
			o: principal?.ownerId ?? "-",
			t: principal?.tenant ?? null,
			c: [...new Set(scopes)],
			e: expiresAt,
			k: signedBy,
		};
		const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
		return { token: `${CLIENT_TOKEN_PREFIX}${body}.${sign(secret, body)}`, expiresAt };
	}

	/**
	 * The principal of a genuine, unexpired token; undefined otherwise (which check failed is not
	 * told apart).
	 */
	verify(token: string, now = Date.now()): Principal | undefined {
		if (token.length > MAX_TOKEN_LENGTH || !token.startsWith(CLIENT_TOKEN_PREFIX)) return undefined;
		const [body, mac, ...rest] = token.slice(CLIENT_TOKEN_PREFIX.length).split(".");
		if (rest.length > 0 || !body || !mac) return undefined;
		let payload: Payload;
		try {
			payload = JSON.parse(Buffer.from(body, "base64url").toString()) as Payload;
		} catch {
			return undefined;
		}
		if (!isPayload(payload)) return undefined;
		const secret = payload.k === "k" ? this.keySecrets.get(payload.o) : this.jwtSecret;
		if (!secret) return undefined;
		const expected = Buffer.from(sign(secret, body));
		const presented = Buffer.from(mac);
		if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return undefined;
		if (payload.e <= now) return undefined;
		return {
			kind: "client-token",
			ownerId: payload.o,
			subject: `client-token:${payload.o}`,
			tenant: payload.t,
			scopes: [],
			expiresAt: payload.e,
			session: { id: payload.s, scopes: payload.c },
		};
	}
}

function derive(secret: string): Buffer {
	return createHmac("sha256", secret).update(LABEL).digest();
}

function sign(secret: Buffer, body: string): string {
	return createHmac("sha256", secret).update(body).digest("base64url");
}

function isPayload(p: unknown): p is Payload {
	const v = p as Partial<Payload> | null;
	return (
		typeof v === "object" &&
		v !== null &&
		typeof v.s === "string" &&
		typeof v.o === "string" &&
		(v.t === null || typeof v.t === "string") &&
		Array.isArray(v.c) &&
		v.c.every((c) => CLIENT_SCOPES.includes(c)) &&
		typeof v.e === "number" &&
		(v.k === "k" || v.k === "j")
	);
}
