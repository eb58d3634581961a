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
 * only, no inline script or style, no frames, no plugins.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync } from "fastify";

/** The page's policy; `img-src data:` is for the empty favicon the page declares (no request). */
export const PLAYGROUND_CSP = [
	"default-src 'self'",
	"script-src 'self'",
	"style-src 'self'",
	"img-src 'self' data:",
	"connect-src 'self'",
	"object-src 'none'",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
].join("; ");

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
	const candidates = [path.join(here, "../playground"), path.join(here, "../../dist/playground")];
	return candidates.find((dir) => REQUIRED.every((file) => existsSync(path.join(dir, file))));
}

export interface PlaygroundOptions {
	/** Folder of the built page (index.html, app.js, style.css). */
	dir: string;
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

	for (const url of ["/", "/playground"]) {
		app.get(url, common, async function playgroundPage(_request, reply) {
			return reply
				.type(TYPES[".html"]!)
				.header("content-security-policy", PLAYGROUND_CSP)
				.header("x-content-type-options", "nosniff")
				.header("referrer-policy", "no-referrer")
				.header("cache-control", "no-cache")
				.send(index);
		});
	}

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
