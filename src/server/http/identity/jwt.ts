/**
 * Bearer JWTs from the team's identity provider, verified with `jose` against the provider's
 * published key set (JWKS).
 *
 * The key set is fetched on first use and kept for `jwksCacheMaxAgeMs`; a token signed with a key id
 * (`kid`) the cached set lacks fetches it again at once (at most once per `jwksCooldownMs`), so a
 * provider's new key is honoured from its first token and a key it withdrew stops verifying once
 * the cache age passes. That is `jose`'s `createRemoteJWKSet`.
 *
 * A token passes when its signature verifies with an accepted algorithm, `iss` is the issuer, `aud`
 * holds one of the audiences, `exp`/`nbf` hold (within the clock tolerance), the subject claim is a
 * non-empty string, the tenant claim (when configured) is a non-empty string, and every required
 * scope is among its scopes. Anything else is a {@link JwtRejection}: the caller gets 401 with
 * `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750) and a description of what failed —
 * never the token.
 */
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from "jose";
import { jwtOwnerId, type Principal } from "./principal.js";
import type { JwtSettings } from "./settings.js";

/** Why a token was refused (the `error_description` of the 401). */
export interface JwtRejection {
	kind: "rejected";
	/** RFC 6750: `invalid_token` (bad, expired, wrong audience) or `insufficient_scope` (403). */
	error: "invalid_token" | "insufficient_scope";
	description: string;
}

/** A compact JWS: three base64url parts. A bearer value of another shape is not a JWT (an API key). */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** True when `bearer` has the shape of a JWT (so it is verified as one, not compared with the API keys). */
export function looksLikeJwt(bearer: string): boolean {
	return JWT_SHAPE.test(bearer);
}

/** The scopes of a token: `scope` (space-separated) and `scp` (array or space-separated). */
function scopesOf(payload: JWTPayload): string[] {
	const found: string[] = [];
	for (const claim of [payload.scope, payload.scp]) {
		if (typeof claim === "string") found.push(...claim.split(" ").filter(Boolean));
		else if (Array.isArray(claim)) found.push(...claim.filter((s): s is string => typeof s === "string"));
	}
	return found;
}

/** What a failure of `jwtVerify` tells the caller. */
function describe(err: unknown): string {
	if (err instanceof errors.JWTExpired) return "the token has expired";
	if (err instanceof errors.JWTClaimValidationFailed) {
		if (err.claim === "iss") return "the token was issued by another issuer";
		if (err.claim === "aud") return "the token is for another audience";
		if (err.claim === "nbf") return "the token is not valid yet";
		return `the token's "${err.claim}" claim is not valid`;
	}
	if (err instanceof errors.JWKSNoMatchingKey) return "the token's signing key is not in the issuer's key set";
	if (err instanceof errors.JOSEAlgNotAllowed) return "the token's signing algorithm is not accepted";
	if (err instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify";
	if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) {
		return "the issuer's key set could not be fetched; retry later";
	}
	if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) return "the token is malformed";
	return "the token could not be verified";
}

/** Verifies bearer JWTs for one app (its key-set cache is its own). */
export class JwtVerifier {
	private readonly keySet: ReturnType<typeof createRemoteJWKSet>;

	constructor(private readonly settings: JwtSettings) {
		this.keySet = createRemoteJWKSet(settings.jwksUrl, {
			cacheMaxAge: settings.jwksCacheMaxAgeMs,
			cooldownDuration: settings.jwksCooldownMs,
			timeoutDuration: settings.jwksTimeoutMs,
		});
	}

	/**
	 * The principal of `token`, or why it is refused. Contract: never throws (a key-set fetch that
	 * fails is a rejection too: nothing unverified gets in).
	 */
	async verify(token: string): Promise<Principal | JwtRejection> {
		const s = this.settings;
		let payload: JWTPayload;
		try {
			({ payload } = await jwtVerify(token, this.keySet, {
				issuer: s.issuer,
				audience: s.audience,
				algorithms: s.algorithms,
				clockTolerance: s.clockToleranceSec,
				requiredClaims: ["exp"],
			}));
		} catch (err) {
			return { kind: "rejected", error: "invalid_token", description: describe(err) };
		}
		const subject = payload[s.subjectClaim];
		if (typeof subject !== "string" || subject === "") {
			return { kind: "rejected", error: "invalid_token", description: `the token has no "${s.subjectClaim}" claim` };
		}
		let tenant: string | null = null;
		if (s.tenantClaim) {
			const claim = payload[s.tenantClaim];
			if (typeof claim !== "string" || claim === "") {
				return { kind: "rejected", error: "invalid_token", description: `the token has no "${s.tenantClaim}" claim` };
			}
			tenant = claim;
		}
		const scopes = scopesOf(payload);
		const missing = s.requiredScopes.filter((scope) => !scopes.includes(scope));
		if (missing.length > 0) {
			return {
				kind: "rejected",
				error: "insufficient_scope",
				description: `the token lacks the scope${missing.length > 1 ? "s" : ""} ${missing.join(" ")}`,
			};
		}
		return {
			kind: "jwt",
			ownerId: jwtOwnerId(s.issuer, tenant, subject),
			subject,
			tenant,
			scopes,
			...(typeof payload.exp === "number" ? { expiresAt: payload.exp * 1000 } : {}),
		};
	}
}
