/**
 * The page's sign-in with the server's identity provider: the OAuth 2.0 authorization-code flow
 * with PKCE (S256) for a public client, as OAuth 2.0 for Browser-Based Apps describes it.
 *
 * `beginSignIn` keeps a fresh `state`, `nonce` and code verifier in this tab's sessionStorage and
 * goes to the provider; when the provider sends the browser back to the page, `finishSignIn` takes
 * them out again (each is used once), refuses an answer whose `state` is not the one it sent (a
 * forged or replayed redirect) before anything else, exchanges the code at the token endpoint from
 * the browser, and refuses an ID token whose `nonce`, issuer or audience is not this sign-in's.
 * The token the page then uses (the access token, or the ID token when the server says so) goes
 * to the caller, which keeps it in sessionStorage like a pasted one: never localStorage, never a
 * cookie, gone when the tab closes.
 */

/** The public client settings of `GET /playground/auth.json`. */
export interface OidcClient {
	issuer: string;
	clientId: string;
	authorizationEndpoint: string;
	tokenEndpoint: string;
	scopes: string[];
	token: "access" | "id";
	authorizationParams: Record<string, string>;
}

/** What `GET /playground/auth.json` said: settings, no sign-in, or why it is not available now. */
export type OidcAvailability = { client: OidcClient } | { client: null } | { unavailable: string };

const PENDING_STORAGE = "wheelhouse.oidc.pending";

/** What a sign-in in progress keeps across the trip to the provider. */
interface Pending {
	state: string;
	nonce: string;
	verifier: string;
	redirectUri: string;
	/** The page's hash when it left (the open session), put back on return. */
	hash: string;
}

/** A sign-in that must not go on; `message` is for the user. */
export class SignInError extends Error {
	constructor(message: string) {
		super(message);
		this.name = "SignInError";
	}
}

function base64url(bytes: Uint8Array): string {
	let text = "";
	for (const byte of bytes) text += String.fromCharCode(byte);
	return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** 32 random bytes, base64url: 43 characters, as RFC 7636 asks of a verifier. */
function randomToken(): string {
	return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function s256(verifier: string): Promise<string> {
	return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

/** Where the provider sends the browser back: the page itself (register this URL with the provider). */
export function redirectUri(): string {
	return new URL("/playground", location.href).href;
}

/** Reads `GET /playground/auth.json`. */
export async function loadOidc(): Promise<OidcAvailability> {
	try {
		const response = await fetch("/playground/auth.json");
		const data = await response.json();
		if (response.ok) return { client: (data?.oidc as OidcClient | null) ?? null };
		return { unavailable: data?.error?.message ?? `HTTP ${response.status}` };
	} catch (error) {
		return { unavailable: String((error as Error).message) };
	}
}

/** Starts a sign-in: keeps its secrets in this tab and sends the browser to the provider. */
export async function beginSignIn(client: OidcClient): Promise<void> {
	const pending: Pending = {
		state: randomToken(),
		nonce: randomToken(),
		verifier: randomToken(),
		redirectUri: redirectUri(),
		hash: location.hash,
	};
	sessionStorage.setItem(PENDING_STORAGE, JSON.stringify(pending));
	const url = new URL(client.authorizationEndpoint);
	for (const [name, value] of Object.entries(client.authorizationParams)) url.searchParams.set(name, value);
	url.searchParams.set("response_type", "code");
	url.searchParams.set("client_id", client.clientId);
	url.searchParams.set("redirect_uri", pending.redirectUri);
	url.searchParams.set("scope", client.scopes.join(" "));
	url.searchParams.set("state", pending.state);
	url.searchParams.set("nonce", pending.nonce);
	url.searchParams.set("code_challenge", await s256(pending.verifier));
	url.searchParams.set("code_challenge_method", "S256");
	location.assign(url.href);
}

/** Forgets a sign-in in progress (signing out, or its answer was used). */
export function forgetPendingSignIn(): void {
	sessionStorage.removeItem(PENDING_STORAGE);
}

/** The claims of a JWT (not verified: the server verifies what it is sent; see {@link finishSignIn}). */
function claimsOf(jwt: string): Record<string, unknown> {
	const part = jwt.split(".")[1];
	if (!part) throw new SignInError("The identity provider's ID token is not a JWT.");
	try {
		const text = atob(part.replace(/-/g, "+").replace(/_/g, "/"));
		return JSON.parse(new TextDecoder().decode(Uint8Array.from(text, (c) => c.charCodeAt(0))));
	} catch {
		throw new SignInError("The identity provider's ID token is not a JWT.");
	}
}

/**
 * Finishes a sign-in when the page was opened by the provider's redirect (`?code=…&state=…` or
 * `?error=…`): the address loses those parameters first (a reload must not use the code again),
 * then the answer is checked and the code exchanged. Resolves with the token to use, or undefined
 * when the page was not opened by a redirect; rejects with a {@link SignInError} otherwise.
 *
 * The ID token's signature is not checked here: it came straight from the token endpoint over
 * the connection the page opened (OpenID Connect Core §3.1.3.7 lets such a client rely on TLS),
 * and the server verifies the token the page sends with every request against the key set anyway.
 */
export async function finishSignIn(client: OidcClient | null): Promise<string | undefined> {
	const params = new URLSearchParams(location.search);
	if (!params.has("code") && !params.has("error")) return undefined;
	const raw = sessionStorage.getItem(PENDING_STORAGE);
	forgetPendingSignIn();
	const pending: Pending | null = raw ? JSON.parse(raw) : null;
	history.replaceState(null, "", `${location.pathname}${pending?.hash ?? ""}`);
	if (!pending) throw new SignInError("Sign-in refused: this tab did not start a sign-in (or finished it already).");
	// The state first: an answer to another sign-in (or a forged one) says nothing more worth reading.
	if (params.get("state") !== pending.state) {
		throw new SignInError("Sign-in refused: the answer is not for the sign-in this tab started (state mismatch).");
	}
	if (!client) throw new SignInError("Sign-in refused: the server has no sign-in with an identity provider.");
	const error = params.get("error");
	if (error) {
		const description = params.get("error_description");
		throw new SignInError(
			`The identity provider refused the sign-in: ${error}${description ? ` (${description})` : ""}.`,
		);
	}
	// RFC 9207: a provider that names itself must be this one (a mix-up attack sends another's answer).
	const iss = params.get("iss");
	if (iss !== null && iss !== client.issuer) {
		throw new SignInError("Sign-in refused: the answer comes from another identity provider.");
	}
	let response: Response;
	try {
		response = await fetch(client.tokenEndpoint, {
			method: "POST",
			headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
			body: new URLSearchParams({
				grant_type: "authorization_code",
				code: params.get("code") ?? "",
				redirect_uri: pending.redirectUri,
				client_id: client.clientId,
				code_verifier: pending.verifier,
			}),
		});
	} catch (err) {
		throw new SignInError(
			`The identity provider's token endpoint could not be reached (${(err as Error).message}); it must allow this page's origin (CORS).`,
		);
	}
	const answer = await response.json().catch(() => ({}));
	if (!response.ok) {
		const reason = typeof answer?.error === "string" ? answer.error : `HTTP ${response.status}`;
		throw new SignInError(`The identity provider did not issue a token: ${reason}.`);
	}
	if (typeof answer.id_token !== "string") {
		throw new SignInError('The identity provider sent no ID token (is "openid" among the scopes?).');
	}
	const claims = claimsOf(answer.id_token);
	if (claims.nonce !== pending.nonce) {
		throw new SignInError("Sign-in refused: the ID token is not for the sign-in this tab started (nonce mismatch).");
	}
	const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
	if (claims.iss !== client.issuer || !audience.includes(client.clientId)) {
		throw new SignInError("Sign-in refused: the ID token is from another issuer or for another client.");
	}
	const token = client.token === "id" ? answer.id_token : answer.access_token;
	if (typeof token !== "string" || token === "") {
		throw new SignInError("The identity provider sent no access token.");
	}
	return token;
}
