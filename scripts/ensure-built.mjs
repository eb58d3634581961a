// `npm start` runs dist/main.js; build first when dist is missing or older than src (the server's
// sources, and the playground page's, which `npm run build` bundles into dist/playground).
import { execSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function newest(dir) {
	let t = 0;
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		const p = join(dir, e.name);
		t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
	}
	return t;
}

/** Each output and the sources it is built from. */
const outputs = [
	{ file: "dist/main.js", sources: "src" },
	{ file: "dist/playground/app.js", sources: "src/playground" },
	{ file: "dist/playground/index.html", sources: "src/playground" },
];
const stale = outputs.some(({ file, sources }) => !existsSync(file) || newest(sources) > statSync(file).mtimeMs);
if (stale) {
	if (!existsSync("node_modules/typescript") || !existsSync("node_modules/esbuild")) {
		console.error(
			"dist/ is missing or stale and TypeScript or esbuild is not installed: run `npm ci` (with dev dependencies) first.",
		);
		process.exit(1);
	}
	execSync("npm run build", { stdio: "inherit" });
}
