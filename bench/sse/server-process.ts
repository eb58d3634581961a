/**
 * The server under test of bench/sse, in its own process (forked by index.ts): either the raw
 * node:http writer or the real Wheelhouse server (buildApp, faux/echo at 0 ms delay unless
 * `fauxDelayMs` says otherwise, memory,
 * SQLite or PostgreSQL store, metrics on unless `metrics: "off"`, tracing on with `otlpEndpoint`) with one extra tool, `bench_wait`, that runs until the orchestrator says
 * `release` (for the steering measurement).
 *
 * Or the bare Fastify baseline of the guard (fastify-baseline.ts), or pi-agent-core's loop behind a
 * bare endpoint (bench/memory/reference-server.mjs) for the guard's `--pi`.
 *
 * IPC: receives one {@link ServerStart}, answers `{type:"ready", url}`; then `{type:"rss"}` →
 * `{type:"rss", rss}`, `{type:"cpu"}` → `{type:"cpu", micros}` (process CPU time so far),
 * `{type:"flush"}` → `{type:"flushed", error?}` once the spans ended so far are exported (at once
 * when tracing is off), `{type:"release"}` ends the running `bench_wait` calls, and
 * `{type:"profile-start", cpuIntervalUs}` → `{type:"profiling"}` starts V8's CPU profiler and its
 * sampling heap profiler (collected objects included) in this process, `{type:"profile-stop"}` →
 * `{type:"profiled", cpu, heap}` stops both and hands over their profiles (observability-cost.ts).
 */
import type { Session } from "node:inspector/promises";
import { splitFrames, startRawServer } from "./raw-server.js";

export type ServerStart =
	| { kind: "raw"; streams: Record<string, string> }
	/** The bare Fastify baseline (fastify-baseline.ts): `prompts` maps a prompt message to its recorded stream. */
	| { kind: "fastify"; prompts: Record<string, string> }
	/** pi-agent-core's Agent behind a bare node:http SSE endpoint with an echo model (bench/memory/reference-server.mjs). */
	| { kind: "pi" }
	| {
			kind: "wheelhouse";
			store: "memory" | "sqlite" | "postgres";
			dbPath?: string;
			/** PostgreSQL store: the database URL and the schema (one replica, created if missing). */
			databaseUrl?: string;
			databaseSchema?: string;
			fauxDelayMs?: number;
			/** Prometheus metrics (default: the server's default, on). */
			metrics?: "on" | "off";
			/** Turns on `POST /api/stream` without API keys (bench/facades). */
			piProxy?: "on";
			/** Traces exported over OTLP/HTTP (protobuf) to this endpoint, set as the standard OTEL_* variables. */
			otlpEndpoint?: string;
			/** More server settings (ServerConfig keys, e.g. `{ compaction: "off" }`): what one feature costs, in the guard's rounds. */
			config?: Record<string, unknown>;
	  };

export type ServerReply =
	| { type: "ready"; url: string }
	| { type: "rss"; rss: number }
	| { type: "cpu"; micros: number }
	| { type: "flushed"; error?: string }
	| { type: "tool_started" }
	| { type: "profiling" }
	| { type: "profiled"; cpu: unknown; heap: unknown }
	| { type: "error"; message: string };

const reply = (message: ServerReply) => process.send!(message);
const waiting: (() => void)[] = [];
/** Exports the spans ended so far (the SDK's own batch processor, flushed now instead of on its timer). */
let flushSpans: () => Promise<void> = async () => {};
/** The inspector session of a running profile. */
let profiler: Session | undefined;

async function startProfiling(cpuIntervalUs: number): Promise<void> {
	const { Session } = await import("node:inspector/promises");
	profiler = new Session();
	profiler.connect();
	await profiler.post("Profiler.enable");
	await profiler.post("Profiler.setSamplingInterval", { interval: cpuIntervalUs });
	await profiler.post("HeapProfiler.enable");
	// Every allocation counts, also of objects the collections already freed (V8's flags, newer
	// than Node's types of them).
	const sampling = {
		samplingInterval: 16_384,
		includeObjectsCollectedByMajorGC: true,
		includeObjectsCollectedByMinorGC: true,
	};
	await profiler.post("HeapProfiler.startSampling", sampling);
	await profiler.post("Profiler.start");
}

async function stopProfiling(): Promise<{ cpu: unknown; heap: unknown }> {
	if (!profiler) throw new Error("bench: profile-stop without profile-start");
	const { profile: cpu } = await profiler.post("Profiler.stop");
	const { profile: heap } = await profiler.post("HeapProfiler.stopSampling");
	profiler.disconnect();
	profiler = undefined;
	return { cpu, heap };
}

async function startWheelhouse(start: Extract<ServerStart, { kind: "wheelhouse" }>): Promise<string> {
	const { Type } = await import("@sinclair/typebox");
	const { buildApp } = await import("../../src/server/http/app.js");
	const { createMemoryStore, openPostgresStore, openSqliteStore } = await import("../../src/store/index.js");
	const store =
		start.store === "sqlite"
			? openSqliteStore({ path: start.dbPath! })
			: start.store === "postgres"
				? await openPostgresStore({ url: start.databaseUrl!, schema: start.databaseSchema! })
				: createMemoryStore();
	const benchWait = {
		name: "bench_wait",
		label: "Bench wait",
		description: "Waits until the benchmark releases it.",
		parameters: Type.Object({}),
		execute: () =>
			new Promise<{ content: { type: "text"; text: string }[]; details: undefined }>((resolve) => {
				waiting.push(() => resolve({ content: [{ type: "text", text: "released" }], details: undefined }));
				reply({ type: "tool_started" });
			}),
	};
	// Tracing: the SDK the server builds from the standard OTEL_* variables, built here with the
	// server's own code (src/server/observability/tracing/sdk.ts) and handed to it, so that the bench can flush it.
	const env = start.otlpEndpoint
		? { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: start.otlpEndpoint, OTEL_SERVICE_NAME: "wheelhouse-bench" }
		: undefined;
	let tracer: { provider: import("@opentelemetry/api").TracerProvider; shutdown(): Promise<void> } | undefined;
	if (env) {
		const { tracingSettingsFrom } = await import("../../src/server/observability/tracing/settings.js");
		const { startTracerProvider } = await import("../../src/server/observability/tracing/sdk.js");
		const settings = tracingSettingsFrom(env);
		if (!settings.export) throw new Error("bench: the OTEL_* variables turned no exporter on");
		tracer = await startTracerProvider(settings.export);
		// The SDK's queue of ended spans (the SDK's providers have forceFlush).
		const provider = tracer.provider as import("@opentelemetry/api").TracerProvider & { forceFlush(): Promise<void> };
		flushSpans = () => provider.forceFlush();
	}
	const app = await buildApp({
		store,
		tools: [benchWait],
		...(env && tracer ? { env, tracerProvider: tracer.provider } : {}),
		config: {
			logLevel: "silent",
			fauxDelayMs: start.fauxDelayMs ?? 0,
			heartbeatMs: 0,
			...(start.metrics ? { metrics: start.metrics } : {}),
			...(start.piProxy ? { piProxy: start.piProxy } : {}),
			...start.config,
		},
	});
	await app.listen({ port: 0, host: "127.0.0.1" });
	const address = app.server.address() as { port: number };
	process.on("SIGTERM", () => {
		app
			.close()
			.then(() => tracer?.shutdown())
			.finally(() => process.exit(0));
	});
	return `http://127.0.0.1:${address.port}`;
}

async function start(message: ServerStart): Promise<void> {
	if (message.kind === "fastify") {
		const { startFastifyBaseline } = await import("./fastify-baseline.js");
		const streams = new Map(Object.entries(message.prompts).map(([prompt, body]) => [prompt, splitFrames(body)]));
		reply({ type: "ready", url: (await startFastifyBaseline(streams)).url });
		return;
	}
	if (message.kind === "pi") {
		const { startReferenceServer } = await import("../memory/reference-server.mjs");
		reply({ type: "ready", url: (await startReferenceServer()).url });
		return;
	}
	if (message.kind === "raw") {
		const streams = new Map(Object.entries(message.streams).map(([name, body]) => [name, splitFrames(body)]));
		const { url } = await startRawServer(streams);
		reply({ type: "ready", url });
		return;
	}
	reply({ type: "ready", url: await startWheelhouse(message) });
}

let started = false;
process.on("message", (message: any) => {
	if (!started) {
		started = true;
		start(message as ServerStart).catch((error: Error) => {
			reply({ type: "error", message: error.stack ?? String(error) });
			process.exit(1);
		});
		return;
	}
	if (message.type === "cpu") {
		const { user, system } = process.cpuUsage();
		reply({ type: "cpu", micros: user + system });
	} else if (message.type === "rss") {
		globalThis.gc?.();
		reply({ type: "rss", rss: process.memoryUsage().rss });
	} else if (message.type === "flush") {
		flushSpans().then(
			() => reply({ type: "flushed" }),
			(error: Error) => reply({ type: "flushed", error: error.message }),
		);
	} else if (message.type === "profile-start") {
		startProfiling(message.cpuIntervalUs).then(
			() => reply({ type: "profiling" }),
			(error: Error) => reply({ type: "error", message: error.message }),
		);
	} else if (message.type === "profile-stop") {
		stopProfiling().then(
			(profiles) => reply({ type: "profiled", ...profiles }),
			(error: Error) => reply({ type: "error", message: error.message }),
		);
	} else if (message.type === "release") {
		for (const release of waiting.splice(0)) release();
	}
});
