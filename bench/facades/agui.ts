/**
 * bench/facades/agui: the AG-UI stream against the native SSE stream of the same run.
 *
 *   npx tsx bench/facades/agui.ts [--quick]   (BENCH_AGUI_REPEATS=5, or 1 with --quick)
 *
 * 1. Same run, same process: a server from buildApp (memory store, a scripted model answering N
 *    words to a one-word prompt, 0 ms between words) on loopback; a session is created with /v1,
 *    its native stream opened (`GET /v1/sessions/:id/events`), then the run is started through
 *    AG-UI (`POST /agui/v1/run` with the session id as thread id). Both streams of that one run
 *    are read by the same client: event frames and bytes per token (one token = one text delta),
 *    and events/s as each client saw them (frames over the time from the run's first frame to its
 *    last). The producer is shared, so events/s mostly tells whether either encoding holds the
 *    run back; the per-event encoding cost is part 2.
 * 2. The encoders alone, in-process: an `Agent` running the faux/echo streamer at 0 ms with a
 *    listener that encodes each event natively (`encodeWireData` + `formatEventFrame`, what the
 *    session log does) or as AG-UI (`AguiEncoder`, what the AG-UI routes do), against a no-op
 *    listener (the pipeline floor). Process CPU µs per event, median of rounds; the encoder's own
 *    cost is the difference to the floor.
 */
import { cpus, loadavg } from "node:os";
import { Agent } from "../../src/agent/agent.js";
import type { StreamFn } from "../../src/agent/types.js";
import { registerFauxProvider } from "../../src/ai/providers/faux.js";
import { AguiEncoder } from "../../src/server/facades/agui/encoder.js";
import { buildApp } from "../../src/server/http/app.js";
import { createEchoModel, streamEchoText } from "../../src/server/runtime/echo-model.js";
import { encodeWireData } from "../../src/wire/events.js";
import { formatEventFrame } from "../../src/wire/sse-frames.js";

const QUICK = process.argv.includes("--quick");
const REPEATS = Number(process.env.BENCH_AGUI_REPEATS ?? (QUICK ? 1 : 5));
const SIZES = [200, 2_000, 10_000];
const ENCODER_ROUNDS = QUICK ? 4 : 21;

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

interface StreamCount {
	frames: number;
	bytes: number;
	firstAt: number;
	lastAt: number;
}

/**
 * Reads SSE `response` frame by frame; `count(frame)` says whether a frame belongs to the run
 * (counted) and `done(frame)` whether it is the run's last.
 */
async function readFrames(
	response: Response,
	count: (frame: string) => boolean,
	done: (frame: string) => boolean,
	onFrame?: (frame: string) => void,
): Promise<StreamCount> {
	const reader = (response.body as ReadableStream<Uint8Array>).getReader();
	const decoder = new TextDecoder();
	const result: StreamCount = { frames: 0, bytes: 0, firstAt: 0, lastAt: 0 };
	let buffer = "";
	for (;;) {
		const { value, done: ended } = await reader.read();
		if (ended) return result;
		buffer += decoder.decode(value, { stream: true });
		let at = buffer.indexOf("\n\n");
		while (at >= 0) {
			const frame = buffer.slice(0, at);
			buffer = buffer.slice(at + 2);
			at = buffer.indexOf("\n\n");
			onFrame?.(frame);
			if (!count(frame)) continue;
			const now = performance.now();
			if (result.frames === 0) result.firstAt = now;
			result.lastAt = now;
			result.frames++;
			result.bytes += Buffer.byteLength(frame) + 2;
			if (done(frame)) {
				await reader.cancel();
				return result;
			}
		}
	}
}

interface SameRun {
	tokens: number;
	native: StreamCount;
	agui: StreamCount;
}

async function sameRun(
	url: string,
	model: string,
	tokens: number,
	setAnswer: (text: string) => void,
): Promise<SameRun> {
	const created = await fetch(`${url}/v1/sessions`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ model }),
	});
	const { id } = (await created.json()) as { id: string };
	setAnswer(words(tokens));
	let subscribed!: () => void;
	const live = new Promise<void>((resolve) => {
		subscribed = resolve;
	});
	let inRun = false;
	const nativeResponse = await fetch(`${url}/v1/sessions/${id}/events`);
	const native = readFrames(
		nativeResponse,
		(frame) => {
			if (frame.includes("\nevent: agent_start\n")) inRun = true;
			return inRun;
		},
		(frame) => frame.includes("\nevent: agent_end\n"),
		(frame) => {
			if (frame.includes("event: session_snapshot")) subscribed();
		},
	);
	await live;
	const aguiResponse = await fetch(`${url}/agui/v1/run`, {
		method: "POST",
		headers: { "content-type": "application/json", accept: "text/event-stream" },
		body: JSON.stringify({ threadId: id, runId: "bench", messages: [{ id: "u1", role: "user", content: "go" }] }),
	});
	const agui = await readFrames(
		aguiResponse,
		(frame) => frame.startsWith("data:"),
		() => false,
	);
	return { tokens, native: await native, agui };
}

type Listener = ((event: never) => void) & { bytes?: () => number };

/** Process CPU µs per event of one echo run of `text` with `listen` as the agent's listener. */
async function cpuPerEvent(text: string, listen: Listener): Promise<number> {
	const model = createEchoModel();
	const streamFn: StreamFn = (m, context, options) =>
		streamEchoText(m, text, { signal: options?.signal, delayMs: 0, context });
	const agent = new Agent({ initialState: { model, systemPrompt: "", tools: [] }, streamFn });
	let events = 0;
	agent.subscribe((event) => {
		events++;
		listen(event as never);
	});
	const before = process.cpuUsage();
	await agent.prompt("go");
	const used = process.cpuUsage(before);
	return (used.user + used.system) / events;
}

/**
 * Each listener's CPU µs per event and its cost above the no-op floor: rounds run every variant
 * back to back in rotating order, and the cost is the median of the per-round differences, so
 * load drift on a shared machine cancels out instead of landing on one variant.
 */
async function encoderCosts(
	deltas: number,
	variants: Record<string, () => Listener>,
): Promise<Record<string, { us: number; own: number; bytes: number }>> {
	const text = words(deltas);
	const names = Object.keys(variants);
	const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
	const own: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
	const bytes: Record<string, number> = {};
	for (let r = 0; r < ENCODER_ROUNDS + 2; r++) {
		const order = names.map((_, i) => names[(i + r) % names.length] as string);
		const round: Record<string, number> = {};
		for (const name of order) {
			const listen = (variants[name] as () => Listener)();
			round[name] = await cpuPerEvent(text, listen);
			bytes[name] = listen.bytes?.() ?? 0;
		}
		// The first two rounds warm the JIT.
		if (r < 2) continue;
		for (const name of names) {
			(samples[name] as number[]).push(round[name] as number);
			(own[name] as number[]).push((round[name] as number) - (round[names[0] as string] as number));
		}
	}
	return Object.fromEntries(
		names.map((n) => [
			n,
			{ us: median(samples[n] as number[]), own: median(own[n] as number[]), bytes: bytes[n] ?? 0 },
		]),
	);
}

function withBytes(listen: (event: never) => void, bytes: () => number) {
	return Object.assign(listen, { bytes });
}

const nativeListener = () => {
	let id = 0;
	let bytes = 0;
	return withBytes(
		(event: never) => {
			const frame = formatEventFrame(++id, (event as { type: string }).type, encodeWireData(event));
			bytes += frame.length;
		},
		() => bytes,
	);
};

const aguiListener = () => {
	let bytes = 0;
	const encoder = new AguiEncoder({
		write: (frame) => {
			bytes += frame.length;
		},
		clientTools: new Set(),
		sentByClient: new Set(),
		transcriptLength: () => 0,
		protocol: "1.0",
	});
	return withBytes(
		(event: never) => encoder.agentEvent(event),
		() => bytes,
	);
};

const fmt = (n: number, digits = 1) =>
	n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
	console.log(
		`bench/facades/agui — node ${process.version}, ${cpus().length} cores, load average ${fmt(loadavg()[0] as number)}, ${REPEATS} repeats (median)`,
	);
	const faux = registerFauxProvider({ api: "bench-agui", provider: "scripted" });
	const model = `scripted/${faux.getModel().id}`;
	const app = await buildApp({
		env: {},
		models: [faux.getModel()],
		config: { logLevel: "silent", heartbeatMs: 0, metrics: "off", playground: "off", fauxDelayMs: 0 },
	});
	await app.listen({ port: 0, host: "127.0.0.1" });
	const { port } = app.server.address() as { port: number };
	const url = `http://127.0.0.1:${port}`;
	const setAnswer = (text: string) => faux.setResponses([{ content: text, chunk: "word", delayMs: 0 }]);

	console.log("\nSame run, both streams read by one client (scripted answer, one-word prompt)");
	console.log(
		"| tokens | native B/token | AG-UI B/token | AG-UI / native bytes | native frames/token | AG-UI frames/token | native events/s | AG-UI events/s |",
	);
	console.log("|---|---|---|---|---|---|---|---|");
	await sameRun(url, model, 200, setAnswer); // warm-up
	for (const tokens of SIZES) {
		const runs: SameRun[] = [];
		for (let r = 0; r < REPEATS; r++) runs.push(await sameRun(url, model, tokens, setAnswer));
		const rate = (c: StreamCount) => c.frames / Math.max(1e-3, (c.lastAt - c.firstAt) / 1000);
		const nb = median(runs.map((r) => r.native.bytes / tokens));
		const ab = median(runs.map((r) => r.agui.bytes / tokens));
		console.log(
			`| ${tokens.toLocaleString("en-US")} | ${fmt(nb)} | ${fmt(ab)} | ${fmt(ab / nb, 2)}x | ${fmt(median(runs.map((r) => r.native.frames / tokens)), 2)} | ${fmt(median(runs.map((r) => r.agui.frames / tokens)), 2)} | ${fmt(median(runs.map((r) => rate(r.native))), 0)} | ${fmt(median(runs.map((r) => rate(r.agui))), 0)} |`,
		);
	}
	await app.close();

	console.log(
		`\nEncoders alone, in-process (faux/echo at 0 ms, ${(QUICK ? 2_000 : 10_000).toLocaleString("en-US")} deltas, ${ENCODER_ROUNDS} interleaved rounds; CPU µs per event, median)`,
	);
	const deltas = QUICK ? 2_000 : 10_000;
	const costs = await encoderCosts(deltas, {
		"no-op (pipeline floor)": () => () => {},
		"native (encodeWireData + frame)": nativeListener,
		"AG-UI (AguiEncoder)": aguiListener,
	});
	console.log(
		"| listener | CPU µs/event | encoder µs/event (median of per-round differences) | encoder events/s | bytes/delta |",
	);
	console.log("|---|---|---|---|---|");
	for (const [name, cost] of Object.entries(costs)) {
		const own = Math.max(0, cost.own);
		console.log(
			`| ${name} | ${fmt(cost.us, 2)} | ${fmt(cost.own, 2)} | ${own > 0 ? fmt(1e6 / own, 0) : "–"} | ${cost.bytes ? fmt(cost.bytes / deltas) : "–"} |`,
		);
	}
}

await main();
