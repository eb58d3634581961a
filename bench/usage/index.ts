/**
 * The cost of usage accounting per model call, against the transcript's length.
 *
 * Each model call's assistant message is stored with `appendMessages`, which adds its usage to the
 * owner's usage row in the same commit. This bench times one turn (a user message and an assistant
 * message with usage, appended, then the commit barrier) on a SQLite store, for sessions whose
 * transcripts hold 50 and 5,000 messages (at the start; each turn adds two), the read of the
 * owner's usage rows, and as a baseline what a budget check that sums the transcript's usage would
 * cost instead: reading the whole transcript.
 *
 *   npx tsx bench/usage/index.ts [--quick]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { AgentMessage } from "../../src/agent/types.js";
import type { AssistantMessage } from "../../src/ai/types.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";

const quick = process.argv.includes("--quick");
const TURNS = quick ? 200 : 1000;
const SIZES = [50, 5_000];

function reply(i: number): AssistantMessage {
	return {
		role: "assistant",
		content: [{ type: "text", text: `answer ${i} `.padEnd(200, "a") }],
		api: "bench",
		provider: "bench",
		model: "m",
		usage: {
			input: 900,
			output: 100,
			cacheRead: 0,
			cacheWrite: 0,
			totalTokens: 1000,
			cost: { input: 0.001, output: 0.001, cacheRead: 0, cacheWrite: 0, total: 0.002 },
		},
		stopReason: "stop",
		timestamp: Date.now(),
	};
}

const user = (i: number): AgentMessage => ({ role: "user", content: `question ${i}`, timestamp: Date.now() });

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)] as number;
}

const dir = mkdtempSync(path.join(tmpdir(), "bench-usage-"));
const store = openSqliteStore({ path: path.join(dir, "bench.db") });
const rows: string[] = [];
try {
	for (const size of SIZES) {
		const id = `s${size}`;
		const history: AgentMessage[] = [];
		for (let i = 0; history.length < size; i++) history.push(user(i), reply(i));
		await store.createSession({
			id,
			ownerId: "owner",
			model: "bench/m",
			systemPrompt: "",
			thinkingLevel: "off",
			tools: [],
			toolExecution: "parallel",
			steeringMode: "one-at-a-time",
			followUpMode: "one-at-a-time",
			metadata: {},
			createdAt: 1,
		});
		store.appendMessages(id, history);
		await store.sync();
		const turn: number[] = [];
		const scan: number[] = [];
		const read: number[] = [];
		for (let i = 0; i < TURNS; i++) {
			let t = performance.now();
			store.appendMessages(id, [user(i), reply(i)]);
			await store.sync();
			turn.push((performance.now() - t) * 1000);
			if (i % 10 === 0) {
				t = performance.now();
				await store.readUsage({ ownerId: "owner", fromDay: "2000-01-01", toDay: "2100-01-01" });
				read.push((performance.now() - t) * 1000);
				t = performance.now();
				let tokens = 0;
				for (let offset = 0; ; offset += 1000) {
					const page = await store.listMessages(id, { offset, limit: 1000 });
					for (const m of page?.messages ?? []) if (m.role === "assistant") tokens += m.usage.totalTokens;
					if (!page || page.messages.length < 1000) break;
				}
				scan.push((performance.now() - t) * 1000);
				if (tokens === 0) throw new Error("nothing summed");
			}
		}
		rows.push(
			`| ${size.toLocaleString("en")} | ${median(turn).toFixed(1)} | ${median(read).toFixed(1)} | ${median(scan).toFixed(1)} |`,
		);
	}
	console.log("| messages | turn: append + commit, µs | readUsage, µs | baseline: sum the transcript, µs |");
	console.log("| --- | --- | --- | --- |");
	for (const row of rows) console.log(row);
} finally {
	await store.close();
	rmSync(dir, { recursive: true, force: true });
}
