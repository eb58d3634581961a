/**
 * Tool-layer overheads, each against a baseline measured in the same run:
 *
 * - `calculate`: expressions evaluated per second (no baseline: there is no eval to compare with).
 * - MCP over stdio: `fx__echo` calls through `McpManager` vs the SDK `Client.callTool` directly (each
 *   its own fixture child); sequential latency (p50/p99) and throughput with 16 calls in flight.
 *   Rounds alternate between the two and the median round is printed.
 * - HTTP tools: GET calls through `createHttpTool` vs a raw undici `request` to the same local server.
 *
 *   npx tsx bench/tools/index.ts [--quick]
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { request } from "undici";
import { evaluateArithmetic } from "../../src/tools/builtin/arithmetic.js";
import { createHttpTool } from "../../src/tools/http-tools.js";
import { McpManager } from "../../src/tools/mcp/index.js";
import { fixtureCommand } from "../../test/tools/helpers.js";

const quick = process.argv.includes("--quick");
const scale = quick ? 0.2 : 1;

function percentile(sorted: number[], p: number): number {
	return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function sequential(
	n: number,
	call: () => Promise<unknown>,
): Promise<{ perSec: number; p50: number; p99: number }> {
	for (let i = 0; i < Math.min(50, n); i++) await call(); // warm-up
	const times: number[] = [];
	const started = performance.now();
	for (let i = 0; i < n; i++) {
		const t = performance.now();
		await call();
		times.push(performance.now() - t);
	}
	const total = performance.now() - started;
	times.sort((a, b) => a - b);
	return { perSec: (n / total) * 1000, p50: percentile(times, 50), p99: percentile(times, 99) };
}

async function concurrent(n: number, inFlight: number, call: () => Promise<unknown>): Promise<number> {
	let next = 0;
	const started = performance.now();
	await Promise.all(
		Array.from({ length: inFlight }, async () => {
			while (next++ < n) await call();
		}),
	);
	return (n / (performance.now() - started)) * 1000;
}

const fmt = (x: number) => x.toFixed(x < 10 ? 3 : 0);

/** Runs `a` and `b` alternately for `rounds` rounds (load on a shared machine hits both alike); returns each one's median round. */
async function alternate<T>(
	rounds: number,
	a: () => Promise<T>,
	b: () => Promise<T>,
	key: (r: T) => number,
): Promise<[T, T]> {
	const ra: T[] = [];
	const rb: T[] = [];
	for (let i = 0; i < rounds; i++) {
		ra.push(await a());
		rb.push(await b());
	}
	const median = (xs: T[]) => [...xs].sort((x, y) => key(x) - key(y))[Math.floor(xs.length / 2)]!;
	return [median(ra), median(rb)];
}

// --- calculate ----------------------------------------------------------------------------------
{
	const expr = "sqrt(16) + 2 * (3 - 1) ^ 2 / 4 % 3 + max(1, 2.5e0, 3) - -ln(e)";
	const n = Math.round(200_000 * scale);
	for (let i = 0; i < 10_000; i++) evaluateArithmetic(expr);
	const started = performance.now();
	for (let i = 0; i < n; i++) evaluateArithmetic(expr);
	const ms = performance.now() - started;
	console.log(
		`calculate: ${fmt((n / ms) * 1000)} evaluations/s (${fmt((ms / n) * 1000)} µs each, ${expr.length} chars)`,
	);
}

// --- MCP over stdio -----------------------------------------------------------------------------
{
	const n = Math.round(2000 * scale);
	const manager = new McpManager({ fx: { ...fixtureCommand(), pingIntervalMs: 0 } });
	await manager.start();
	const echo = manager.tools().find((t) => t.name === "fx__echo")!;
	const ours = () => echo.execute("b", { text: "hello" });

	const raw = new Client({ name: "bench", version: "0" });
	await raw.connect(new StdioClientTransport(fixtureCommand()));
	const direct = () => raw.callTool({ name: "echo", arguments: { text: "hello" } });

	const [seqOurs, seqDirect] = await alternate(
		5,
		() => sequential(n, ours),
		() => sequential(n, direct),
		(r) => r.perSec,
	);
	const [parOurs, parDirect] = await alternate(
		5,
		() => concurrent(n, 16, ours),
		() => concurrent(n, 16, direct),
		(r) => r,
	);
	console.log(
		`mcp stdio sequential: McpManager ${fmt(seqOurs.perSec)} calls/s (p50 ${fmt(seqOurs.p50)} ms, p99 ${fmt(seqOurs.p99)} ms)` +
			` | SDK Client ${fmt(seqDirect.perSec)} calls/s (p50 ${fmt(seqDirect.p50)} ms, p99 ${fmt(seqDirect.p99)} ms)`,
	);
	console.log(`mcp stdio 16 in flight: McpManager ${fmt(parOurs)} calls/s | SDK Client ${fmt(parDirect)} calls/s`);
	await raw.close();
	await manager.stop();
}

// --- HTTP tools ---------------------------------------------------------------------------------
{
	const n = Math.round(3000 * scale);
	const server = createServer((_req, res) => {
		res.writeHead(200, { "content-type": "application/json" }).end('{"temperature":21.5,"city":"Berlin"}');
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	const tool = createHttpTool({ name: "w", description: "d", url: `${base}/weather/{city}` });
	const ours = () => tool.execute("b", { city: "Berlin" });
	const direct = async () => {
		const res = await request(`${base}/weather/Berlin`);
		return res.body.text();
	};
	const [seqOurs, seqDirect] = await alternate(
		5,
		() => sequential(n, ours),
		() => sequential(n, direct),
		(r) => r.perSec,
	);
	console.log(
		`http tool sequential: createHttpTool ${fmt(seqOurs.perSec)} calls/s (p50 ${fmt(seqOurs.p50)} ms)` +
			` | raw undici ${fmt(seqDirect.perSec)} calls/s (p50 ${fmt(seqDirect.p50)} ms)`,
	);
	server.close();
}
