/**
 * Stream tokens: short-lived credentials that open one session's event stream without an
 * `Authorization` header, for clients that cannot send one (the browser's `EventSource`).
 *
 * A token is `<owner>.<expiry>.<mac>`: the owner id of the API key that minted it (`-` when auth
 * is off), its expiry in ms since the epoch (base 36), and an HMAC-SHA256 over session id, owner
 * and expiry. The HMAC key is derived from the minting API key itself, so a token:
 * - survives a restart and is valid on every replica configured with the same keys;
 * - dies with its key: removing a key from `WHEELHOUSE_API_KEYS` revokes every token it minted;
 * - names no session: it only verifies against the session id of the request it comes with.
 *
 * A JWT caller has no key: its tokens are signed with a secret derived from `auth.clientTokenSecret`.
 *
 * Nothing is stored: a token cannot be revoked before it expires except by removing its key, which
 * is why its lifetime is short (`WHEELHOUSE_STREAM_TOKEN_TTL_MS`). It is checked when a stream
 * opens; a stream already open stays open after the token expires.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { apiError } from "./errors.js";

/** The query parameter that carries a stream token. */
export const STREAM_TOKEN_PARAM = "token";

/** A freshly minted token and when it stops opening streams. */
export interface MintedStreamToken {
	token: string;
	/** Milliseconds since the epoch. */
	expiresAt: number;
}

/** Derivation label: a stream-token key is never equal to (or usable as) the API key it comes from. */
const LABEL = "wheelhouse stream token v1";
/** Longer than any token this module mints; anything longer is refused before hashing. */
const MAX_TOKEN_LENGTH = 600;
const NO_OWNER = "-";
/** The owner ids of JWT callers start so (identity/principal.ts). */
const JWT_OWNER_PREFIX = "jwt-";

/** Mints and verifies the stream tokens of one app (nothing shared between apps). */
export class StreamTokens {
	/** HMAC key per owner id; without keys (auth off) only `-`, with a random key of this instance. */
	private readonly secrets = new Map<string, Buffer>();

	/** HMAC key of the owners that are no API key (JWT callers), from `auth.clientTokenSecret`. */
	private readonly otherSecret: Buffer | undefined;

	/**
	 * `keys`: every configured API key with its owner id (see auth.ts). `otherSecret`: the secret of
	 * every other owner (JWT callers; `auth.clientTokenSecret`); without it they cannot mint one.
	 */
	constructor(
		keys: ReadonlyArray<{ apiKey: string; ownerId: string }>,
		readonly ttlMs: number,
		otherSecret?: string,
	) {
		for (const { apiKey, ownerId } of keys)
			this.secrets.set(ownerId, createHmac("sha256", apiKey).update(LABEL).digest());
		if (keys.length === 0) this.secrets.set(NO_OWNER, randomBytes(32));
		this.otherSecret = otherSecret === undefined ? undefined : createHmac("sha256", otherSecret).update(LABEL).digest();
	}

	private secretOf(owner: string): Buffer | undefined {
		return this.secrets.get(owner) ?? (owner.startsWith(JWT_OWNER_PREFIX) ? this.otherSecret : undefined);
	}

	/** A token for `sessionId` and `ownerId` (the caller has checked that the owner may read the session). */
	mint(sessionId: string, ownerId: string | null, now = Date.now()): MintedStreamToken {
		const owner = ownerId ?? NO_OWNER;
		const secret = this.secretOf(owner);
		if (!secret) {
			throw apiError(
				"FORBIDDEN",
				"Stream tokens for callers signed in with a JWT need `auth.clientTokenSecret` in the server config.",
			);
		}
		const expiresAt = now + this.ttlMs;
		const expiry = expiresAt.toString(36);
		return { token: `${owner}.${expiry}.${sign(secret, sessionId, owner, expiry)}`, expiresAt };
	}

	/**
	 * The owner id the token was minted for, when it is genuine, unexpired and minted for
	 * `sessionId`; `undefined` otherwise (which of these failed is not told apart: a caller
	 * learns nothing by probing).
	 */
	verify(token: string, sessionId: string, now = Date.now()): { ownerId: string | null } | undefined {
		if (token.length > MAX_TOKEN_LENGTH) return undefined;
		const [owner, expiry, mac, ...rest] = token.split(".");
		if (rest.length > 0 || !owner || !expiry || !mac || !/^[0-9a-z]{1,12}$/.test(expiry)) return undefined;
		const secret = this.secretOf(owner);
		if (!secret) return undefined;
		const expected = Buffer.from(sign(secret, sessionId, owner, expiry));
		const presented = Buffer.from(mac);
		if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return undefined;
		if (Number.parseInt(expiry, 36) <= now) return undefined;
		return { ownerId: owner === NO_OWNER ? null : owner };
	}
}

function sign(secret: Buffer, sessionId: string, owner: string, expiry: string): string {
	return createHmac("sha256", secret).update(`${sessionId}\n${owner}\n${expiry}`).digest("base64url");
}
