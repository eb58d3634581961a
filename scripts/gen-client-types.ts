/**
 * Writes src/client/api-types.ts from openapi.yaml with openapi-typescript:
 * `npx tsx scripts/gen-client-types.ts` (`npm run openapi` runs it after writing openapi.yaml).
 *
 * The client's request and response types come from the same document the server publishes;
 * test/client/api-types.test.ts fails when the committed file differs from what this renders.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const API_TYPES_FILE = path.join(ROOT, "src/client/api-types.ts");

const HEADER = `/**
 * The Wheelhouse HTTP API's types, generated from openapi.yaml by scripts/gen-client-types.ts
 * (openapi-typescript). Do not edit: \`npm run openapi\` regenerates it.
 */
`;

/** The file as src/client/api-types.ts holds it. */
export async function renderApiTypes(): Promise<string> {
	const yaml = readFileSync(path.join(ROOT, "openapi.yaml"), "utf8");
	const ast = await openapiTS(yaml, { alphabetize: false, exportType: false, defaultNonNullable: false });
	// Formatted as `npm run format` would, so that formatting the tree leaves the file as rendered.
	return execFileSync(path.join(ROOT, "node_modules/.bin/biome"), ["format", `--stdin-file-path=${API_TYPES_FILE}`], {
		cwd: ROOT,
		input: HEADER + astToString(ast),
		encoding: "utf8",
		maxBuffer: 64 * 1024 * 1024,
	});
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	const text = await renderApiTypes();
	writeFileSync(API_TYPES_FILE, text);
	console.log(`wrote ${path.relative(process.cwd(), API_TYPES_FILE)} (${text.length} bytes)`);
}
