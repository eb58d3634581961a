/**
 * Serves the playground page: the browser client of the `/v1` API built from src/playground by
 * `npm run build` (scripts/build-playground.ts) into dist/playground. The page is `GET /` and
 * `GET /playground`; its assets are `GET /playground/<file>`.
 *
 * These routes are open without an API key (`config: { public: true }`): they hold no data, and
 * the page asks for a key and sends it with each `/v1` request itself. They are left out of the
 * OpenAPI document (not part of the API).
 *
 * The page gets a strict Content-Security-Policy: scripts, styles and connections from this origin
 * only (and the identity provider's token endpoint, when the page signs in with it), no inline
 * script or style, no frames, no plugins.
 *
 * `GET /playground/auth.json` tells the page how it may sign in: `{ "oidc": null }` (pasted API keys
 * and tokens only), or the public client settings of `auth.jwt.playground` (identity/playground-oidc.ts)
 * for the authorization-code flow with PKCE. Nothing in it is a secret: the page is a public client.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync } from "fastify";
import { apiError } from "./errors.js";
import type { PlaygroundOidcClient } from "./identity/playground-oidc.js";

/**
 * The page's policy; `img-src data:` is for the empty favicon the page declares (no request).
 * `tokenOrigin`: the identity provider's token endpoint, which the page exchanges its code at.
 */
export function playgroundCsp(tokenOrigin?: string): string {
	return [
		"default-src 'self'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self' data:",
		tokenOrigin ? `connect-src 'self' ${tokenOrigin}` : "connect-src 'self'",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	].join("; ");
}

const TYPES: Record<string, string> = {
	".html": "text/html; charset=utf-8",
	".js": "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".map": "application/json; charset=utf-8",
};

/** The files a build of the page must have. */
const REQUIRED = ["index.html", "app.js", "style.css"];

/**
 * Where the built page is: dist/playground beside dist/server (the installed package and the
 * container), or, when the server runs from src/ (tsx), the repository's dist/playground.
 * `undefined` when neither holds a build.
 */
export function defaultPlaygroundDir(): string | undefined {
	const here = path.dirname(fileURLToPath(import.meta.url));
	const candidates = [path.join(here, "../../playground"), path.join(here, "../../../dist/playground")];
	return candidates.find((dir) => REQUIRED.every((file) => existsSync(path.join(dir, file))));
}

export interface PlaygroundOptions {
	/** Folder of the built page (index.html, app.js, style.css). */
	dir: string;
	/** The page's sign-in client (`auth.jwt.playground`); absent: pasted keys and tokens only. */
	oidc?: PlaygroundOidcClient;
}

/**
 * The page's routes. Files are read once, at registration: they are small and change only with a
 * new build (a restart serves the new one).
 */
export const playgroundRoutes: FastifyPluginAsync<PlaygroundOptions> = async (app, options) => {
	const files = new Map<string, Buffer>();
	for (const name of readdirSync(options.dir)) {
		if (TYPES[path.extname(name)]) files.set(name, readFileSync(path.join(options.dir, name)));
	}
	const index = files.get("index.html")!;
	const common = { config: { public: true }, schema: { hide: true }, logLevel: "warn" as const };

	const { oidc } = options;
	for (const url of ["/", "/playground"]) {
		app.get(url, common, async function playgroundPage(_request, reply) {
			// Without a known token endpoint the page still loads; its sign-in says why it cannot start.
			const tokenOrigin = oidc ? await oidc.tokenOrigin() : undefined;
			return reply
				.type(TYPES[".html"]!)
				.header("content-security-policy", playgroundCsp(tokenOrigin))
				.header("x-content-type-options", "nosniff")
				.header("referrer-policy", "no-referrer")
				.header("cache-control", "no-cache")
				.send(index);
		});
	}

	app.get("/playground/auth.json", common, async function playgroundSignIn(_request, reply) {
		reply.header("cache-control", "no-cache");
		if (!oidc) return { oidc: null };
		try {
			return { oidc: await oidc.resolve() };
		} catch (err) {
			throw apiError("IDENTITY_PROVIDER_UNAVAILABLE", (err as Error).message);
		}
	});

	for (const [name, body] of files) {
		if (name === "index.html") continue;
		app.get(`/playground/${name}`, common, async function playgroundAsset(_request, reply) {
			return reply
				.type(TYPES[path.extname(name)]!)
				.header("x-content-type-options", "nosniff")
				.header("cache-control", "no-cache")
				.send(body);
		});
	}
};
