/**
 * Where a round's server CPU goes, for this tree and another commit side by side: per round, 100
 * sessions created one after another (as `--compare` prepares its jobs), then a run
 * streamed on each of them at once (what `--compare` measures), then 100 clients that each create
 * a session and stream at once (what the guard measures). It tells a cost of creating sessions
 * from one of streaming when the two benches disagree.
 *
 *   npx tsx bench/sse/phases.ts [<ref>, default b4abb17] [--store sqlite|memory (default sqlite)]
 *   BENCH_PHASES_ROUNDS (20): rounds, the two servers taking turns in a balanced order;
 *   BENCH_PHASES_TOKENS (200): tokens per run (fewer: the per-run costs weigh more than the per-event ones);
 *   BENCH_PHASES_EACH=1 also prints every round's figures (warm-up trends, outliers)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { createSessions, promptRequest, words } from "./harness.js";
import { checkoutOf, roundOrder, runClient, ServerChild } from "./index.js";

const ROUNDS = Number(process.env.BENCH_PHASES_ROUNDS ?? 20);
const TOKENS = Number(process.env.BENCH_PHASES_TOKENS ?? 200);
const args = process.argv.slice(2);
const storeAt = args.indexOf("--store");
const STORE = (storeAt >= 0 ? args[storeAt + 1] : "sqlite") as "sqlite" | "memory";
const ref = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--store") ?? "b4abb17";
const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-bench-phases-"));
const old = checkoutOf(ref, dir, "old");
const servers = [
	await ServerChild.start({ kind: "wheelhouse", store: STORE, dbPath: path.join(dir, "new.db") }),
	await ServerChild.start({ kind: "wheelhouse", store: STORE, dbPath: path.join(dir, "old.db") }, old),
];
const names = ["this tree", ref];
const out = servers.map(() => ({ seqCreate: [] as number[], stream: [] as number[], concurrent: [] as number[] }));
const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
async function turn(i: number, record: boolean) {
	const s = servers[i]!;
	let t = await s.cpu();
	const ids = await createSessions(s.url, 100);
	let t2 = await s.cpu();
	if (record) out[i]!.seqCreate.push((t2 - t) / 1000);
	t = t2;
	await runClient({ requests: ids.map((id) => promptRequest(s.url, id, words(TOKENS))) });
	t2 = await s.cpu();
	if (record) out[i]!.stream.push((t2 - t) / 1000);
	t = t2;
	await runClient({
		requests: Array.from({ length: 100 }, () => ({
			...promptRequest(s.url, "{id}", words(TOKENS)),
			create: { url: `${s.url}/v1/sessions`, body: JSON.stringify({ model: "faux/echo" }) },
		})),
	});
	t2 = await s.cpu();
	if (record) out[i]!.concurrent.push((t2 - t) / 1000);
}
for (let i = 0; i < servers.length; i++) await turn(i, false);
for (let r = 0; r < ROUNDS; r++) for (const i of roundOrder(r, 2)) await turn(i, true);
console.log(
	`bench/sse phases — ${STORE} store, ${ROUNDS} rounds, ${TOKENS} tokens per run, node ${process.version}, load average ${loadavg()[0].toFixed(1)}`,
);
for (const [i, o] of out.entries())
	console.log(
		`${names[i]}: server CPU ms, median of ${ROUNDS}: 100 sequential creates ${med(o.seqCreate).toFixed(1)}, then streaming them ${med(o.stream).toFixed(1)}; 100 concurrent create+stream ${med(o.concurrent).toFixed(1)}`,
	);
if (process.env.BENCH_PHASES_EACH)
	for (const [i, o] of out.entries())
		console.log(
			names[i],
			"stream per round",
			o.stream.map((x) => x.toFixed(0)).join(" "),
			"| concurrent",
			o.concurrent.map((x) => x.toFixed(0)).join(" "),
		);
for (const s of servers) await s.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
