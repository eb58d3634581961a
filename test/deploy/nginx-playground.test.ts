/**
 * The playground through a real nginx configured as deploy/nginx.conf, in front of a real server
 * serving a real build of the page: its script, stylesheet and page leave compressed (the bundle
 * is the largest thing the server sends a browser), and decompress to the bytes the server has.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveNginx, type Nginx, nginxTitle, startNginx } from "../helpers/nginx.js";
import { startServer, type TestServer } from "../helpers/server.js";

const enabled = haveNginx();

let dir: string;
let server: TestServer;
let nginx: Nginx;

beforeAll(async () => {
	if (!enabled) return;
	dir = mkdtempSync(path.join(tmpdir(), "wh-nginx-playground-"));
	const { buildPlayground } = await import("../../scripts/build-playground.js");
	await buildPlayground(dir);
	server = await startServer({ playgroundDir: dir });
	nginx = await startNginx([new URL(server.url).host]);
}, 120_000);

afterAll(async () => {
	await nginx?.stop();
	await server?.close();
	if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!enabled)("the playground through nginx (deploy/nginx.conf)", () => {
	it(nginxTitle("compresses the page, its script and its stylesheet"), async () => {
		for (const [url, file, type] of [
			["/playground/app.js", "app.js", "text/javascript"],
			["/playground/style.css", "style.css", "text/css"],
			["/", "index.html", "text/html"],
		] as const) {
			const size = readFileSync(path.join(dir, file)).length;
			const direct = await fetch(`${server.url}${url}`);
			expect(direct.headers.get("content-type"), url).toMatch(new RegExp(`^${type}`));
			// Only bodies of at least gzip_min_length are compressed: these are.
			expect(size, `${file} is large enough to be compressed`).toBeGreaterThanOrEqual(1024);
			const res = await fetch(`${nginx.url}${url}`, { headers: { "accept-encoding": "gzip" } });
			expect(res.status, url).toBe(200);
			expect(res.headers.get("content-encoding"), `${url} (${type})`).toBe("gzip");
			// fetch decompresses: the bytes are the server's own.
			expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(await direct.arrayBuffer())), url).toBe(true);
		}
	});
});
