/**
 * What one span and one labelled metric update cost on this machine, with the libraries the server
 * uses and nothing else: the floor under what `--tracing` measures. A run of the bench's
 * concurrent job makes three spans (the prompt request's server span, `invoke_agent`, `chat`) and
 * about eight labelled metric updates, so their cost, over the server's CPU per event, bounds how
 * close metrics and tracing can come to "everything off" for answers of a given length.
 *
 *   npx tsx bench/sse/span-cost.ts   (BENCH_SPAN_COST_RUNS=20000 runs of three spans)
 *
 * Spans are made as the server makes them: the same SDK (src/server/observability/tracing/sdk.ts, OTLP over
 * HTTP/protobuf to the bench's collector in its own process), attributes of the same count and
 * kind, a server span parenting the other two; the export is flushed every 512 spans (the batch
 * processor's batch size) and counted. Each figure is the median of five rounds, CPU time of this
 * process per span or per update.
 *
 * In the server a span is not made in a tight loop: other work (a request's parsing, a whole
 * streamed answer) runs before each moment a span is touched. The `cold` figures put a stand-in
 * for that work before each of them and time the span calls alone.
 */
import { fork } from "node:child_process";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { type Attributes, ROOT_CONTEXT, type Span, SpanKind, type Tracer, trace } from "@opentelemetry/api";
import { Counter, Histogram, Registry } from "prom-client";
import { startTracerProvider } from "../../src/server/observability/tracing/sdk.js";
import { tracingSettingsFrom } from "../../src/server/observability/tracing/settings.js";
import type { ReceiverReply } from "./otlp-receiver.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const RUNS = Number(process.env.BENCH_SPAN_COST_RUNS ?? 20_000);
const ROUNDS = 5;

function cpuUs(): number {
	const usage = process.cpuUsage();
	return usage.user + usage.system;
}

function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.floor(sorted.length / 2)];
}

const receiver = fork(path.join(here, "otlp-receiver.ts"), [], { execArgv: ["--import", "tsx"] });
const url = await new Promise<string>((resolve) =>
	receiver.once("message", (message: ReceiverReply) => {
		if (message.type === "ready") resolve(message.url);
	}),
);

try {
	const settings = tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_SERVICE_NAME: "span-cost" });
	if (!settings.export) throw new Error("span-cost: no exporter");
	const owned = await startTracerProvider(settings.export);
	const provider = owned.provider as unknown as { forceFlush(): Promise<void> };
	const tracer = owned.provider.getTracer("wheelhouse");

	/**
	 * One run's spans, shaped like the server's (http-spans.ts, run-spans.ts, chat-span.ts), as the
	 * six moments the server touches them: the request's start, the run's, the model call's, then
	 * their ends in reverse.
	 */
	const runSteps = (i: number, tracer: Tracer): (() => void)[] => {
		let request: Span;
		let run: Span;
		let chat: Span;
		return [
			() => {
				request = tracer.startSpan(
					"POST /v1/sessions/:id/prompt",
					{
						kind: SpanKind.SERVER,
						attributes: {
							"http.request.method": "POST",
							"url.path": `/v1/sessions/s${i}/prompt`,
							"url.scheme": "http",
							"http.route": "/v1/sessions/:id/prompt",
						},
					},
					ROOT_CONTEXT,
				);
			},
			() => {
				const runAttributes: Attributes = {
					"gen_ai.operation.name": "invoke_agent",
					"gen_ai.conversation.id": `s${i}`,
					"gen_ai.provider.name": "faux",
					"gen_ai.request.model": "echo",
					"wheelhouse.run.id": `r${i}`,
				};
				run = tracer.startSpan(
					"invoke_agent",
					{ kind: SpanKind.INTERNAL, attributes: runAttributes },
					trace.setSpan(ROOT_CONTEXT, request),
				);
			},
			() => {
				chat = tracer.startSpan(
					"chat echo",
					{
						kind: SpanKind.CLIENT,
						attributes: {
							"gen_ai.operation.name": "chat",
							"gen_ai.provider.name": "faux",
							"gen_ai.request.model": "echo",
							"gen_ai.conversation.id": `s${i}`,
						},
					},
					trace.setSpan(ROOT_CONTEXT, run),
				);
			},
			() => {
				chat.setAttributes({
					"gen_ai.response.model": "echo",
					"gen_ai.response.finish_reasons": ["stop"],
					"gen_ai.usage.input_tokens": 12,
					"gen_ai.usage.output_tokens": 200,
				});
				chat.end();
			},
			() => {
				run.setAttributes({ "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 200 });
				run.end();
			},
			() => {
				request.setAttribute("http.response.status_code", 200);
				request.end();
			},
		];
	};
	const oneRun = (i: number, tracer: Tracer) => {
		for (const step of runSteps(i, tracer)) step();
	};

	const spanRound = async (runs: number): Promise<number> => {
		const before = cpuUs();
		for (let i = 0; i < runs; i++) {
			oneRun(i, tracer);
			// 3 spans per run: flush at the batch processor's batch size, as it would on its own.
			if ((i * 3) % 512 < 3) await provider.forceFlush();
		}
		await provider.forceFlush();
		return (cpuUs() - before) / (runs * 3);
	};

	const registry = new Registry();
	const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
	const counter = new Counter({
		name: "c_total",
		help: "c",
		labelNames: ["provider", "model", "outcome"],
		registers: [registry],
	});
	const histogram = new Histogram({
		name: "h_seconds",
		help: "h",
		labelNames: ["provider", "model", "outcome"],
		buckets,
		registers: [registry],
	});
	const metricRound = (updates: number): number => {
		const before = cpuUs();
		for (let i = 0; i < updates; i += 2) {
			const labels = { provider: "faux", model: "echo", outcome: i % 10 === 0 ? "error" : "stop" };
			counter.inc(labels);
			histogram.observe(labels, (i % 1000) / 100);
		}
		return (cpuUs() - before) / updates;
	};

	// Cold: in the server each of a run's six span moments comes after other work of its own (a
	// request's parsing, a whole streamed answer), and the SDK's path then starts from cold caches.
	// Here a stand-in for that work (8 MB read, some thousands of objects made; not timed) runs
	// before each moment, and the moments are timed directly.
	const scratch = new Float64Array(1 << 20);
	const garbage: unknown[] = [];
	const otherWork = (i: number) => {
		let sum = 0;
		for (let k = 0; k < scratch.length; k += 8) sum += scratch[k]++;
		for (let k = 0; k < 3_000; k++) garbage[k % 5_000] = { k, i, text: String(k), list: [k, sum] };
	};
	const COLD_RUNS = Math.min(RUNS, 1_000);
	const coldRound = async (): Promise<number> => {
		let made = 0;
		for (let i = 0; i < COLD_RUNS; i++) {
			for (const step of runSteps(i, tracer)) {
				otherWork(i);
				const t0 = performance.now();
				step();
				made += performance.now() - t0;
			}
			if ((i * 3) % 512 < 3) await provider.forceFlush();
		}
		await provider.forceFlush();
		return (made * 1000) / (COLD_RUNS * 3);
	};

	await spanRound(Math.min(RUNS, 2_000)); // warm-up (JIT)
	metricRound(20_000);
	const spanUs: number[] = [];
	const metricUs: number[] = [];
	for (let r = 0; r < ROUNDS; r++) {
		spanUs.push(await spanRound(RUNS));
		metricUs.push(metricRound(RUNS * 8));
	}
	await coldRound();
	const coldUs: number[] = [];
	for (let r = 0; r < ROUNDS; r++) coldUs.push(await coldRound());
	const span = median(spanUs);
	const metric = median(metricUs);
	console.log(`span-cost — node ${process.version}, ${RUNS} runs of 3 spans x ${ROUNDS} rounds (median)`);
	console.log(`  one span, made, ended and exported (OTLP http/protobuf): ${span.toFixed(2)} µs CPU`);
	console.log(
		`  one labelled metric update (prom-client counter inc / histogram observe): ${metric.toFixed(2)} µs CPU`,
	);
	console.log(`  one run's 3 spans + 8 updates: ${(3 * span + 8 * metric).toFixed(1)} µs CPU`);
	console.log(
		`  cold (other work before each of a run's six span moments; ${COLD_RUNS} runs, wall time of the span calls, per span):`,
	);
	console.log(`    on the SDK's tracer: ${median(coldUs).toFixed(2)} µs`);
	await owned.shutdown();
} finally {
	receiver.kill();
}
