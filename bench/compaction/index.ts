/**
 * The cost of compaction's token accounting per model call, against the transcript's length.
 *
 * Before every model call a session's `transformContext` hook builds the model's view and counts
 * its tokens (the last answer's reported usage plus estimates of what came after it). This bench
 * calls that hook, as installed on a live session of a real app, on transcripts of 50, 500 and
 * 5,000 messages, each call after two new messages (half a turn), and prints the median time per call:
 *
 * - `reported usage`: the answers carry usage (every hosted provider);
 * - `no usage`: the answers report none (some local servers), so every message is estimated, once;
 * - `after a compaction`: the view is the summary plus the kept messages (the transcript keeps all);
 * - baseline: estimating the whole transcript on every call, as accounting without memory would.
 *
 * The first three must stay flat from 50 to 5,000 messages; the baseline grows with the length.
 *
 *   npx tsx bench/compaction/index.ts [--quick]
 */
import type { AgentMessage } from "../../src/agent/types.js";
import { registerFauxProvider } from "../../src/ai/providers/faux.js";
import type { AssistantMessage, Usage } from "../../src/ai/types.js";
import { buildApp } from "../../src/server/http/app.js";
import type { CompactionExtension } from "../../src/server/runtime/compaction/extension.js";
import { estimateTokens } from "../../src/server/runtime/compaction/tokens.js";
import type { LiveSession } from "../../src/server/runtime/session/live-session.js";

const quick = process.argv.includes("--quick");
/** Calls per round (each adds 2 messages) and rounds per case. */
const CALLS = 25;
const ROUNDS = quick ? 11 : 41;
const SIZES = [50, 500, 5_000];

const faux = registerFauxProvider({
	api: "bench-compaction-faux",
	provider: "bench",
	models: [{ id: "big", contextWindow: 10_000_000, maxTokens: 16_384 }],
});
const app = await buildApp({
	env: {},
	models: [faux.getModel()],
	config: { logLevel: "silent", heartbeatMs: 0, metrics: "off", playground: "off" },
});

const compaction = app.wheelhouse.sessions.extensions.find((e) => e.name === "compaction") as CompactionExtension;

const zero: Usage = {
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: 0,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

function answer(content: AssistantMessage["content"], tokens: number, reported: boolean): AssistantMessage {
	return {
		role: "assistant",
		content,
		api: "bench-compaction-faux",
		provider: "bench",
		model: "big",
		usage: reported ? { ...zero, input: tokens - 50, output: 50, totalTokens: tokens } : zero,
		stopReason: content.some((b) => b.type === "toolCall") ? "toolUse" : "stop",
		timestamp: 1,
	};
}

/** One turn of a tool-using agent: prompt, tool call, result, answer (4 messages, about 130 tokens). */
function turn(i: number, reported: boolean): AgentMessage[] {
	const id = `call_${i}`;
	return [
		{ role: "user", content: [{ type: "text", text: `question ${i} `.padEnd(100, "q") }], timestamp: 1 },
		answer([{ type: "toolCall", id, name: "calculate", arguments: { expression: `${i} * 2` } }], 1_000 + i, reported),
		{
			role: "toolResult",
			toolCallId: id,
			toolName: "calculate",
			content: [{ type: "text", text: `${i * 2} `.padEnd(200, "r") }],
			isError: false,
			timestamp: 1,
		},
		answer([{ type: "text", text: `answer ${i} `.padEnd(200, "a") }], 1_100 + i, reported),
	];
}

function transcriptOf(size: number, reported: boolean): AgentMessage[] {
	const messages: AgentMessage[] = [];
	for (let i = 0; messages.length < size; i++) messages.push(...turn(i, reported));
	return messages.slice(0, size);
}

async function liveSession(messages: AgentMessage[]): Promise<LiveSession> {
	const res = await app.inject({ method: "POST", url: "/v1/sessions", payload: { model: "bench/big", messages } });
	if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`);
	return app.wheelhouse.sessions.get(JSON.parse(res.body).id, null);
}

/**
 * Times single calls of `call`, each after a new turn half (2 messages) was added to a copy of
 * `context`, in short rounds that each start again from `context` (so the transcript stays near its
 * size); returns the median and the 90th percentile of the single calls, in µs.
 */
async function perCall(
	context: AgentMessage[],
	call: (context: AgentMessage[]) => Promise<unknown> | unknown,
	reported: boolean,
): Promise<{ median: number; p90: number }> {
	const times: number[] = [];
	let n = 1_000_000;
	for (let round = 0; round < ROUNDS; round++) {
		const ctx = context.slice();
		for (let i = 0; i < CALLS; i++) {
			const [prompt, call0] = turn(n++, reported);
			ctx.push(prompt as AgentMessage, call0 as AgentMessage);
			const started = process.hrtime.bigint();
			await call(ctx);
			times.push(Number(process.hrtime.bigint() - started) / 1_000);
		}
	}
	times.sort((a, b) => a - b);
	const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
	return { median: at(0.5), p90: at(0.9) };
}

const hook = (session: LiveSession) => (ctx: AgentMessage[]) => compaction.of(session)!.transformContext(ctx);
const fullEstimate = (ctx: AgentMessage[]) => {
	let tokens = 0;
	for (const message of ctx) tokens += estimateTokens(message);
	return tokens;
};

const rows: { case: string; size: number; us: { median: number; p90: number } }[] = [];
for (const size of SIZES) {
	const reported = await liveSession(transcriptOf(size, true));
	rows.push({ case: "reported usage", size, us: await perCall(reported.messages, hook(reported), true) });
	const silent = await liveSession(transcriptOf(size, false));
	rows.push({ case: "no usage", size, us: await perCall(silent.messages, hook(silent), false) });

	const compacted = await liveSession(transcriptOf(size, true));
	faux.setResponses([{ content: "## Goal\nthe summary", usage: { ...zero, totalTokens: 500 } }]);
	const result = await compaction.of(compacted)!.compactNow(undefined, 500);
	if (result.kind !== "compacted") throw new Error(`compaction: ${JSON.stringify(result)}`);
	rows.push({
		case: "after a compaction",
		size,
		us: await perCall(compacted.messages, hook(compacted), true),
	});
	rows.push({ case: "baseline: full estimate", size, us: await perCall(transcriptOf(size, true), fullEstimate, true) });
}
await app.close();

console.log(
	`token accounting per model call, µs: median (90th percentile) of ${ROUNDS * CALLS} calls, each after 2 new messages`,
);
const cases = [...new Set(rows.map((r) => r.case))];
console.log(`${"case".padEnd(26)}${SIZES.map((s) => `${s} msgs`.padStart(18)).join("")}   median 5,000 / 50`);
for (const c of cases) {
	const of = (size: number) => rows.find((r) => r.case === c && r.size === size)!.us;
	const cell = (size: number) => `${of(size).median.toFixed(2)} (${of(size).p90.toFixed(1)})`.padStart(18);
	console.log(`${c.padEnd(26)}${SIZES.map(cell).join("")}   ${(of(5_000).median / of(50).median).toFixed(2)}x`);
}
