/**
 * Builds the playground page (src/playground) into a folder the server serves (default
 * dist/playground): `app.js` is src/playground/main.ts bundled by esbuild with its libraries
 * (wheelhouse-agents/client, marked, DOMPurify) for the browser; `index.html` and `style.css` are copied.
 * `npm run build` runs it after tsc; the browser tests call {@link buildPlayground} into a temp folder.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const PLAYGROUND_SRC = path.join(repoRoot, "src/playground");

/** Builds the page into `outDir`; resolves once the files are written. Throws on a build error. */
export async function buildPlayground(outDir = path.join(repoRoot, "dist/playground")): Promise<void> {
	mkdirSync(outDir, { recursive: true });
	await build({
		entryPoints: [path.join(PLAYGROUND_SRC, "main.ts")],
		outfile: path.join(outDir, "app.js"),
		bundle: true,
		format: "esm",
		platform: "browser",
		target: ["es2022"],
		minify: true,
		legalComments: "none",
		logLevel: "warning",
	});
	for (const file of ["index.html", "style.css"])
		copyFileSync(path.join(PLAYGROUND_SRC, file), path.join(outDir, file));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	await buildPlayground(process.argv[2]);
}
