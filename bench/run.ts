/**
 * Runs every benchmark present, one after another, each in its own process (so one bench's heap,
 * sockets and JIT state cannot skew the next): bench/loop, bench/providers, bench/store, bench/sse, bench/facades,
 * bench/tools, bench/compaction, bench/usage, bench/memory, bench/serializers, bench/cluster (it skips without PostgreSQL and Redis).
 *
 *   npm run bench [-- --only sse,store] [-- any other flags are passed to each bench, e.g. --quick]
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const ORDER = [
	"loop",
	"providers",
	"store",
	"sse",
	"facades",
	"tools",
	"compaction",
	"usage",
	"memory",
	"serializers",
	"cluster",
];

const args = process.argv.slice(2);
const onlyAt = args.indexOf("--only");
const only = onlyAt >= 0 ? new Set(args[onlyAt + 1]?.split(",")) : undefined;
const passThrough = onlyAt >= 0 ? [...args.slice(0, onlyAt), ...args.slice(onlyAt + 2)] : args;

const results: { name: string; status: string; seconds: number }[] = [];
for (const name of ORDER) {
	if (only && !only.has(name)) continue;
	const entry = path.join(benchDir, name, "index.ts");
	if (!existsSync(entry)) {
		results.push({ name, status: "absent", seconds: 0 });
		continue;
	}
	console.log(`\n=== bench/${name} ===`);
	const started = performance.now();
	const child = spawn(process.execPath, ["--import", "tsx", entry, ...passThrough], { stdio: "inherit" });
	const [code, signal] = await once(child, "exit");
	results.push({
		name,
		status: code === 0 ? "ok" : `failed (${signal ?? `exit ${code}`})`,
		seconds: (performance.now() - started) / 1000,
	});
}

console.log("\n=== summary ===");
for (const r of results) console.log(`bench/${r.name.padEnd(10)} ${r.status.padEnd(20)} ${r.seconds.toFixed(1)} s`);
process.exit(results.some((r) => r.status.startsWith("failed")) ? 1 : 0);
