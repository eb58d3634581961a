/**
 * Writes openapi.yaml from the route schemas: `npm run openapi`.
 *
 * The app is built with a fixed configuration (no environment, memory store, built-in tools), so
 * the document depends only on the code; test/server/http/openapi.test.ts fails when the committed file
 * differs from what this renders.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildApp } from "../src/server/http/app.js";
import { openApiYaml } from "../src/server/http/openapi.js";
import { createMemoryStore } from "../src/store/memory.js";

export const OPENAPI_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../openapi.yaml");

const HEADER = "# Generated from the route schemas by `npm run openapi` (scripts/gen-openapi.ts). Do not edit.\n";

/** The document as openapi.yaml holds it. */
export async function renderOpenApi(): Promise<string> {
	const app = await buildApp({ env: {}, config: { logLevel: "silent" }, store: createMemoryStore() });
	try {
		await app.ready();
		return HEADER + (await openApiYaml(app));
	} finally {
		await app.close();
	}
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	const yaml = await renderOpenApi();
	writeFileSync(OPENAPI_FILE, yaml);
	console.log(`wrote ${path.relative(process.cwd(), OPENAPI_FILE)} (${yaml.length} bytes)`);
	// The client's types are generated from the document: kept in step with it.
	const { API_TYPES_FILE, renderApiTypes } = await import("./gen-client-types.js");
	const types = await renderApiTypes();
	writeFileSync(API_TYPES_FILE, types);
	console.log(`wrote ${path.relative(process.cwd(), API_TYPES_FILE)} (${types.length} bytes)`);
}
