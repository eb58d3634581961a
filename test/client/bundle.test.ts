/**
 * The client is importable on its own: bundled for the browser with esbuild, src/client/index.ts
 * pulls in nothing of the server (src/server, src/store), Fastify or better-sqlite3, and no Node
 * built-in.
 */
import path from "node:path";
import { build } from "esbuild";
import { expect, it } from "vitest";
import { repoRoot } from "../helpers/main-process.js";

it("bundles for the browser without server code", async () => {
	const result = await build({
		entryPoints: [path.join(repoRoot, "src/client/index.ts")],
		bundle: true,
		platform: "browser",
		format: "esm",
		write: false,
		metafile: true,
		logLevel: "silent",
	});
	const inputs = Object.keys(result.metafile.inputs);
	expect(inputs).toContain("src/client/wheelhouse-client.ts");
	const forbidden = inputs.filter((file) =>
		/(^|\/)src\/(server|store)\/|node_modules\/(fastify|better-sqlite3|@fastify|pg|ioredis|undici)\//.test(file),
	);
	expect(forbidden).toEqual([]);
	const code = result.outputFiles[0]!.text;
	expect(code).toContain("WheelhouseClient");
	expect(code).not.toMatch(/from\s*["']node:|require\(["'](fastify|better-sqlite3)/);
	expect(code.length).toBeLessThan(200_000);
}, 60_000);
