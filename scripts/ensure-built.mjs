// `npm start` runs dist/main.js; build first when dist is missing or older than src.
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

const entry = "dist/main.js";
if (!existsSync(entry) || newest("src") > statSync(entry).mtimeMs) {
	if (!existsSync("node_modules/typescript")) {
		console.error(
			"dist/ is missing or stale and TypeScript is not installed: run `npm ci` (with dev dependencies) first.",
		);
		process.exit(1);
	}
	execSync("npm run build", { stdio: "inherit" });
}
