/**
 * A local identity provider for tests: an HTTP server publishing a JWKS made with `jose`, keys that
 * can be rotated, and tokens for alice and bob (org A) and carol (org B).
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";

export const ISSUER = "https://login.test.example/";
export const AUDIENCE = "https://agents.test.example";

/** The users of the tests: subject and tenant claim (`org_id`). */
export const USERS = {
	alice: { sub: "auth0|alice", org_id: "org-a" },
	bob: { sub: "auth0|bob", org_id: "org-a" },
	carol: { sub: "auth0|carol", org_id: "org-b" },
} as const;

export type UserName = keyof typeof USERS;

interface SigningKey {
	kid: string;
	privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
	publicJwk: JWK;
}

export interface IdentityProvider {
	jwksUrl: string;
	/** How many times the key set was fetched. */
	fetches(): number;
	/** A token for `user` signed with the current key (or `kid`), valid for an hour unless `claims` say otherwise. */
	token(user: UserName, claims?: JWTPayload & { kid?: string; expiresIn?: string | number }): Promise<string>;
	/** Adds a new signing key and makes it current; returns its kid. `retire`: the old ones leave the set. */
	rotate(options?: { retire?: boolean }): Promise<string>;
	close(): Promise<void>;
}

async function newKey(kid: string): Promise<SigningKey> {
	const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
	return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" } };
}

export async function startIdentityProvider(): Promise<IdentityProvider> {
	let keys: SigningKey[] = [await newKey("key-1")];
	let fetches = 0;
	const server: Server = createServer((req, res) => {
		if (req.url !== "/jwks.json") {
			res.writeHead(404).end();
			return;
		}
		fetches++;
		res.writeHead(200, { "content-type": "application/json" });
		res.end(JSON.stringify({ keys: keys.map((k) => k.publicJwk) }));
	});
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	let next = 2;
	return {
		jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
		fetches: () => fetches,
		async token(user, claims = {}) {
			const { kid, expiresIn, ...rest } = claims;
			const key = kid ? keys.find((k) => k.kid === kid) : keys.at(-1);
			if (!key) throw new Error(`no key ${kid}`);
			const { sub, org_id } = USERS[user];
			return new SignJWT({ org_id, scope: "openid agents", ...rest })
				.setProtectedHeader({ alg: "RS256", kid: key.kid })
				.setSubject(sub)
				.setIssuer((rest.iss as string | undefined) ?? ISSUER)
				.setAudience((rest.aud as string | string[] | undefined) ?? AUDIENCE)
				.setIssuedAt()
				.setExpirationTime(expiresIn ?? "1h")
				.sign(key.privateKey);
		},
		async rotate(options = {}) {
			const key = await newKey(`key-${next++}`);
			keys = options.retire ? [key] : [...keys, key];
			return key.kid;
		},
		async close() {
			server.closeAllConnections();
			server.close();
		},
	};
}

/** The `auth` section of a config file for `idp`. */
export function jwtAuthConfig(idp: IdentityProvider, over: Record<string, unknown> = {}): Record<string, unknown> {
	return {
		jwt: {
			issuer: ISSUER,
			audience: AUDIENCE,
			jwksUrl: idp.jwksUrl,
			algorithms: ["RS256"],
			clockToleranceSec: 0,
			tenantClaim: "org_id",
			requiredScopes: ["agents"],
			...over,
		},
		clientTokenSecret: "a-test-client-token-secret-of-32-chars-or-more",
	};
}
