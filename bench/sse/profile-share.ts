/**
 * Where a server's CPU went, by package: reads the V8 CPU profiles that `BENCH_SSE_CPU_PROF=<dir>`
 * makes bench/sse write (one per server child) and prints, per profile, the share of busy time
 * (idle excluded) spent in the observability code — each OpenTelemetry package, prom-client, and
 * src/server/observability/tracing and metrics — and in garbage collection. Self time only: what a package's
 * functions cost themselves, not the GC their allocations cause.
 *
 *   BENCH_SSE_CPU_PROF=/tmp/prof npx tsx bench/sse/index.ts --tracing
 *   npx tsx bench/sse/profile-share.ts /tmp/prof/*.cpuprofile
 *
 * Profiles cover a server's whole life (startup and session creation included), so a share is an
 * upper bound of what the measured streaming costs.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
	id: number;
	callFrame: { functionName: string; url: string };
}

interface Profile {
	nodes: ProfileNode[];
	samples: number[];
	timeDeltas: number[];
}

function categoryOf(node: ProfileNode): string | undefined {
	const { url, functionName } = node.callFrame;
	const otel = /@opentelemetry\/[a-z-]+/.exec(url);
	if (otel) return otel[0];
	if (url.includes("prom-client")) return "prom-client";
	if (url.includes("src/server/observability/tracing/")) return "src/server/observability/tracing";
	if (url.includes("src/server/metrics")) return "src/server/metrics";
	if (functionName === "(garbage collector)") return "GC";
	if (functionName === "(idle)") return "idle";
	return undefined;
}

for (const file of process.argv.slice(2)) {
	const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
	const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
	const byCategory = new Map<string, number>();
	let total = 0;
	for (let i = 0; i < profile.samples.length; i++) {
		const micros = profile.timeDeltas[i] ?? 0;
		total += micros;
		const category = categoryOf(nodes.get(profile.samples[i]) as ProfileNode);
		if (category) byCategory.set(category, (byCategory.get(category) ?? 0) + micros);
	}
	const busy = total - (byCategory.get("idle") ?? 0);
	byCategory.delete("idle");
	let observability = 0;
	for (const [category, micros] of byCategory) if (category !== "GC") observability += micros;
	const share = (micros: number) => `${((100 * micros) / busy).toFixed(2)}%`;
	console.log(`${file}: busy ${(busy / 1000).toFixed(0)} ms; observability code ${share(observability)}`);
	for (const [category, micros] of [...byCategory].sort((a, b) => b[1] - a[1])) {
		console.log(`  ${category.padEnd(40)} ${share(micros).padStart(7)}`);
	}
}
