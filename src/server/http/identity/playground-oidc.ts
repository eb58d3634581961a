/**
 * The playground's sign-in client at run time: the public client settings the page reads (`GET
 * /playground/auth.json`), with the endpoints the config leaves out taken from the issuer's
 * discovery document (`<issuer>/.well-known/openid-configuration`). The config's side
 * (`auth.jwt.playground`, checked at startup) is config/playground-oidc.ts.
 */
import { discoveryUrl, type PlaygroundOidcSettings } from "../../config/playground-oidc.js";
import { insecureUrlReason } from "../../config/provider-url.js";

/** What the page is told: public by nature (anyone can read it), never a secret. */
export interface PublicOidcClient {
	issuer: string;
	clientId: string;
	authorizationEndpoint: string;
	tokenEndpoint: string;
	scopes: string[];
	token: "access" | "id";
	authorizationParams: Record<string, string>;
}

/** How long a discovered document is used before it is read again. */
const DISCOVERY_MAX_AGE_MS = 10 * 60_000;
/** How long a failed discovery is answered from memory before it is tried again. */
const DISCOVERY_RETRY_MS = 5_000;

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An endpoint of the discovery document, checked as the config's are. */
function discovered(doc: Record<string, unknown>, name: string): string {
	const value = doc[name];
	if (typeof value !== "string") throw new Error(`it has no ${name}`);
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		throw new Error(`its ${name} is not a URL`);
	}
	const reason = insecureUrlReason(url);
	if (reason) throw new Error(`its ${name} ${reason}`);
	return url.href;
}

/**
 * The page's client settings for one app. Contract: `resolve()` answers from memory while a read of
 * the discovery document is fresh (or failed less than a few seconds ago), so each replica reads it
 * at most every ten minutes; a document that cannot be read, or that is for another issuer or
 * offers no S256, rejects with an Error saying why (nothing half-discovered reaches the page).
 */
export class PlaygroundOidcClient {
	private cached: { at: number; result: Promise<PublicOidcClient>; failed: boolean } | undefined;

	constructor(
		private readonly settings: PlaygroundOidcSettings,
		private readonly issuer: string,
		private readonly timeoutMs: number,
	) {}

	resolve(now = Date.now()): Promise<PublicOidcClient> {
		const cached = this.cached;
		if (cached && now - cached.at < (cached.failed ? DISCOVERY_RETRY_MS : DISCOVERY_MAX_AGE_MS)) return cached.result;
		// Kept before it settles: concurrent callers share one read.
		const entry = { at: now, result: this.build(), failed: false };
		entry.result.catch(() => {
			entry.failed = true;
		});
		this.cached = entry;
		return entry.result;
	}

	/**
	 * The token endpoint's origin, which the page's CSP must allow it to connect to: from the config,
	 * or discovered (undefined while discovery fails: the page then cannot sign in, and says why).
	 */
	async tokenOrigin(): Promise<string | undefined> {
		if (this.settings.tokenEndpoint) return this.settings.tokenEndpoint.origin;
		try {
			return new URL((await this.resolve()).tokenEndpoint).origin;
		} catch {
			return undefined;
		}
	}

	private async build(): Promise<PublicOidcClient> {
		const s = this.settings;
		let authorizationEndpoint = s.authorizationEndpoint?.href;
		let tokenEndpoint = s.tokenEndpoint?.href;
		if (!authorizationEndpoint || !tokenEndpoint) {
			const url = discoveryUrl(this.issuer)!;
			let doc: unknown;
			try {
				const response = await fetch(url, {
					headers: { accept: "application/json" },
					redirect: "error",
					signal: AbortSignal.timeout(this.timeoutMs),
				});
				if (!response.ok) throw new Error(`HTTP ${response.status}`);
				doc = await response.json();
			} catch (err) {
				// undici's "fetch failed" says why in its cause (refused, unknown host, TLS).
				const cause = (err as Error & { cause?: Error }).cause?.message;
				throw new Error(
					`the identity provider's discovery document ${url.href} could not be read: ${(err as Error).message}${cause ? ` (${cause})` : ""}`,
				);
			}
			try {
				if (!isObject(doc)) throw new Error("it is not a JSON object");
				// OpenID Connect Discovery 1.0 §4.3: the document is the issuer's own or it is not used.
				if (doc.issuer !== this.issuer) throw new Error(`it is for the issuer ${JSON.stringify(doc.issuer)}`);
				const methods = doc.code_challenge_methods_supported;
				if (Array.isArray(methods) && !methods.includes("S256")) throw new Error("it does not offer PKCE with S256");
				authorizationEndpoint ??= discovered(doc, "authorization_endpoint");
				tokenEndpoint ??= discovered(doc, "token_endpoint");
			} catch (err) {
				throw new Error(
					`the identity provider's discovery document ${url.href} is not usable: ${(err as Error).message}`,
				);
			}
		}
		return {
			issuer: this.issuer,
			clientId: s.clientId,
			authorizationEndpoint,
			tokenEndpoint,
			scopes: s.scopes,
			token: s.token,
			authorizationParams: s.authorizationParams,
		};
	}
}
