/**
 * Prometheus metrics of one server instance: a `Registry` of its own (never prom-client's global
 * one, so two apps in one process share nothing), filled from what already flows through the
 * server rather than from code in every provider:
 *
 * - HTTP requests, from an `onResponse` hook (route pattern, never the URL);
 * - model calls, tokens, cost, retries and tool calls, from a {@link SessionExtension}'s `onEvent`
 *   (the AgentEvents every session already emits);
 * - sessions, runs and queued messages, read from the sessions held at scrape time;
 * - SSE connections, events, bytes and drops, from plain counters the SSE connections bump and
 *   the sockets' byte counts ({@link SseStats}), read at scrape time: the per-event cost is an
 *   integer add;
 * - store commit latency, from the store's optional commit observer;
 * - event-loop lag and the process metrics (prom-client's default collectors, on this registry).
 *
 * The updates made per request and per model call are tallied per label set (counts added up,
 * durations kept in order) and applied to the registry in batches — at each scrape, before it is
 * read, and whenever {@link MAX_PENDING_UPDATES} are waiting — because prom-client's path for one
 * labelled update, run between two streamed answers, starts from cold caches each time (the
 * reason tracing/deferred-tracer.ts gives), and a count tallied is one update per batch, not one
 * per request. A scrape reads the same values it would have read had each update been applied at
 * once. The tallies of a label set are kept from batch to batch: noting allocates nothing that
 * waits for the batch but the durations.
 *
 * Every label has a bounded set of values: tool and model names come from requests (a client may
 * declare any tool name), so past {@link MAX_LABEL_VALUES} distinct values new ones are reported as
 * `other`.
 */
import { performance } from "node:perf_hooks";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { AgentEvent } from "../agent/types.js";
import type { AssistantMessage } from "../ai/types.js";
import type { LiveSession, SessionExtension } from "./session/live-session.js";
import { type SseStats, sseBytesWritten } from "./sse/connection.js";

/** Distinct values one label may take before further ones are reported as `other`. */
export const MAX_LABEL_VALUES = 100;

/** Noted updates that are applied at once, without waiting for a scrape. */
export const MAX_PENDING_UPDATES = 1024;

/** Latency buckets (seconds) of the HTTP, model and tool histograms: 5 ms to 2 min. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Store commits are sub-millisecond to tens of milliseconds. */
const COMMIT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/** Keeps a label's value set bounded: the first {@link MAX_LABEL_VALUES} values pass, the rest are `other`. */
class BoundedLabel {
	private readonly seen = new Set<string>();
	value(raw: string): string {
		if (this.seen.has(raw)) return raw;
		if (this.seen.size >= MAX_LABEL_VALUES) return "other";
		this.seen.add(raw);
		return raw;
	}
}

/** Per-session state of the model call and tool calls in flight. */
interface CallState {
	/** When the current turn (one model call) started: the `turn_start` event. */
	turnStartedAt: number;
	/** No delta of the current model call seen yet. */
	awaitingFirstToken: boolean;
	toolStartedAt: Map<string, number>;
}

/** What was noted for one label set since the last batch: how many, and each one's duration. */
interface Tally {
	count: number;
	/** Durations in seconds, in the order noted (a count may come without one). */
	seconds: number[];
}

/** The value of `key` in `map`, made on first use. */
function entry<K, V>(map: Map<K, V>, key: K, make: () => V): V {
	let found = map.get(key);
	if (found === undefined) {
		found = make();
		map.set(key, found);
	}
	return found;
}

const newTally = (): Tally => ({ count: 0, seconds: [] });
const newMap = <V>(): Map<string, V> => new Map();

/** What was noted for one provider and model since the last batch. */
interface ModelTally {
	/** Calls and their durations by outcome. */
	calls: Map<string, Tally>;
	/** Times to first token, in seconds. */
	firstToken: number[];
	input: number;
	output: number;
	cacheRead: number;
	cacheWrite: number;
	cost: number;
	/** A call with usage was noted: its cost counts, even when 0. */
	costed: boolean;
	retries: number;
}

const newModelTally = (): ModelTally => ({
	calls: new Map(),
	firstToken: [],
	input: 0,
	output: 0,
	cacheRead: 0,
	cacheWrite: 0,
	cost: 0,
	costed: false,
	retries: 0,
});

export interface ServerMetricsOptions {
	/** The sessions held in memory (read at scrape time). */
	liveSessions(): Iterable<LiveSession>;
	/** An update prom-client refused (a negative count); the others are applied. Default: ignored. */
	onUpdateError?(err: unknown): void;
}

/** The metrics of one app. Create with {@link createServerMetrics}. */
export class ServerMetrics {
	readonly registry = new Registry();
	readonly sse: SseStats = { connections: new Set(), events: 0, closedBytes: 0, dropped: 0 };
	/** Observes every session's AgentEvents; register it with `SessionManager.addExtension`. */
	readonly extension: SessionExtension;

	private readonly httpRequests: Counter<"method" | "route" | "status_code">;
	private readonly httpDuration: Histogram<"method" | "route" | "status_code">;
	private readonly modelCalls: Counter<"provider" | "model" | "outcome">;
	private readonly modelDuration: Histogram<"provider" | "model" | "outcome">;
	private readonly firstToken: Histogram<"provider" | "model">;
	private readonly tokens: Counter<"provider" | "model" | "type">;
	private readonly cost: Counter<"provider" | "model">;
	private readonly retries: Counter<"provider" | "model">;
	private readonly toolCalls: Counter<"tool" | "outcome">;
	private readonly toolDuration: Histogram<"tool" | "outcome">;
	private readonly commits: Histogram;
	private readonly rateLimited: Counter<"limit">;
	private readonly webhookAttempts: Counter<"event" | "outcome">;
	private readonly calls = new WeakMap<LiveSession, CallState>();
	private readonly models = new BoundedLabel();
	private readonly tools = new BoundedLabel();
	/** Requests noted since the last batch, by method, route and status code. */
	private readonly requestTallies = new Map<string, Map<string, Map<string, Tally>>>();
	/** Model calls noted since the last batch, by provider and model. */
	private readonly modelTallies = new Map<string, Map<string, ModelTally>>();
	/** Tool calls noted since the last batch, by tool and outcome. */
	private readonly toolTallies = new Map<string, Map<string, Tally>>();
	/** Updates noted and not yet applied. */
	private pending = 0;

	private readonly onUpdateError: ((err: unknown) => void) | undefined;

	constructor(options: ServerMetricsOptions) {
		this.onUpdateError = options.onUpdateError;
		const registers = [this.registry];
		const sessions = { liveSessions: () => options.liveSessions() };
		const sse = this.sse;
		this.httpRequests = new Counter({
			name: "wheelhouse_http_requests_total",
			help: "HTTP requests answered, by method, route pattern and status code (an SSE response once the server ends it; not one the client closed).",
			labelNames: ["method", "route", "status_code"],
			registers,
		});
		this.httpDuration = new Histogram({
			name: "wheelhouse_http_request_duration_seconds",
			help: "Time from the request's arrival to its response's end, by method, route pattern and status code.",
			labelNames: ["method", "route", "status_code"],
			buckets: LATENCY_BUCKETS,
			registers,
		});
		new Gauge({
			name: "wheelhouse_sessions_held",
			help: "Sessions held in memory (the store may hold more; they are loaded on access).",
			registers,
			collect() {
				let held = 0;
				for (const _ of sessions.liveSessions()) held++;
				this.set(held);
			},
		});
		new Gauge({
			name: "wheelhouse_runs_running",
			help: "Runs in progress.",
			registers,
			collect() {
				let running = 0;
				for (const session of sessions.liveSessions()) if (session.isBusy) running++;
				this.set(running);
			},
		});
		new Gauge({
			name: "wheelhouse_queued_messages",
			help: "Steering and follow-up messages waiting in the queues of the sessions held, by kind.",
			labelNames: ["kind"],
			registers,
			collect() {
				let steer = 0;
				let followUp = 0;
				for (const session of sessions.liveSessions()) {
					const counts = session.queueCounts();
					steer += counts.steeringCount;
					followUp += counts.followUpCount;
				}
				this.set({ kind: "steer" }, steer);
				this.set({ kind: "followUp" }, followUp);
			},
		});
		new Gauge({
			name: "wheelhouse_sse_connections",
			help: "SSE responses open (session event streams and run streams).",
			registers,
			collect() {
				this.set(sse.connections.size);
			},
		});
		new Counter({
			name: "wheelhouse_sse_events_sent_total",
			help: "Event frames queued to SSE subscribers (live and replayed).",
			registers,
			collect() {
				this.reset();
				this.inc(sse.events);
			},
		});
		new Counter({
			name: "wheelhouse_sse_bytes_sent_total",
			help: "Bytes written to SSE responses (response heads included).",
			registers,
			collect() {
				this.reset();
				this.inc(sseBytesWritten(sse));
			},
		});
		new Counter({
			name: "wheelhouse_sse_subscribers_dropped_total",
			help: "SSE subscribers dropped for falling behind (they can resume with Last-Event-ID).",
			registers,
			collect() {
				this.reset();
				this.inc(sse.dropped);
			},
		});
		this.modelCalls = new Counter({
			name: "wheelhouse_model_calls_total",
			help: "Model calls, by provider, model and outcome (the stop reason: stop, length, toolUse, error, aborted).",
			labelNames: ["provider", "model", "outcome"],
			registers,
		});
		this.modelDuration = new Histogram({
			name: "wheelhouse_model_call_duration_seconds",
			help: "Duration of a model call, from the turn's start to the complete message (retries included).",
			labelNames: ["provider", "model", "outcome"],
			buckets: LATENCY_BUCKETS,
			registers,
		});
		this.firstToken = new Histogram({
			name: "wheelhouse_model_time_to_first_token_seconds",
			help: "Time from a model call's start to its first streamed delta.",
			labelNames: ["provider", "model"],
			buckets: LATENCY_BUCKETS,
			registers,
		});
		this.tokens = new Counter({
			name: "wheelhouse_model_tokens_total",
			help: "Tokens reported by the providers, by provider, model and type (input, output, cache_read, cache_write).",
			labelNames: ["provider", "model", "type"],
			registers,
		});
		this.cost = new Counter({
			name: "wheelhouse_model_cost_usd_total",
			help: "Cost of the model calls in US dollars, from the model catalog's prices.",
			labelNames: ["provider", "model"],
			registers,
		});
		this.retries = new Counter({
			name: "wheelhouse_model_retries_total",
			help: "Retries of model calls after a retryable failure (429, 5xx, connection errors) before any output.",
			labelNames: ["provider", "model"],
			registers,
		});
		this.toolCalls = new Counter({
			name: "wheelhouse_tool_calls_total",
			help: "Tool calls executed, by tool and outcome (ok or error).",
			labelNames: ["tool", "outcome"],
			registers,
		});
		this.toolDuration = new Histogram({
			name: "wheelhouse_tool_call_duration_seconds",
			help: "Duration of a tool call (approval and client-side waits included), by tool and outcome.",
			labelNames: ["tool", "outcome"],
			buckets: LATENCY_BUCKETS,
			registers,
		});
		this.commits = new Histogram({
			name: "wheelhouse_store_commit_duration_seconds",
			help: "Duration of the session store's commits (SQLite transactions).",
			buckets: COMMIT_BUCKETS,
			registers,
		});
		this.rateLimited = new Counter({
			name: "wheelhouse_rate_limited_total",
			help: "Requests refused by a per-key limit: requests per minute (requests) or concurrent runs (runs).",
			labelNames: ["limit"],
			registers,
		});
		this.webhookAttempts = new Counter({
			name: "wheelhouse_webhook_deliveries_total",
			help: "Webhook delivery attempts by event type and outcome: delivered (2xx), retry (failed, tried again later), failed (given up: attempts used up, 410, or endpoint no longer configured).",
			labelNames: ["event", "outcome"],
			registers,
		});
		collectDefaultMetrics({ register: this.registry });
		this.extension = {
			name: "metrics",
			onEvent: (session, event) => this.onEvent(session, event),
			events: ["turn_start", "message_end", "tool_execution_start", "tool_execution_end"],
			onFirstUpdate: (session, event) => this.onFirstToken(session, event.message as AssistantMessage),
		};
	}

	/** The registry's text, with every noted update applied (a scrape). */
	async scrape(): Promise<string> {
		this.applyPending();
		return this.registry.metrics();
	}

	/** Applies the noted updates to the registry. */
	applyPending(): void {
		if (this.pending === 0) return;
		this.pending = 0;
		for (const [method, routes] of this.requestTallies) {
			for (const [route, statuses] of routes) {
				for (const [status_code, noted] of statuses) {
					this.applyTally(noted, { method, route, status_code }, this.httpRequests, this.httpDuration);
				}
			}
		}
		for (const [provider, models] of this.modelTallies) {
			for (const [model, noted] of models) this.applyModelTally(provider, model, noted);
		}
		for (const [tool, outcomes] of this.toolTallies) {
			for (const [outcome, noted] of outcomes)
				this.applyTally(noted, { tool, outcome }, this.toolCalls, this.toolDuration);
		}
	}

	/** Counts `noted` and observes its durations under `labels`, then empties it. */
	private applyTally<L extends string>(
		noted: Tally,
		labels: Partial<Record<L, string>>,
		counter: Counter<L>,
		histogram: Histogram<L>,
	): void {
		const { count, seconds } = noted;
		if (count === 0) return;
		noted.count = 0;
		if (seconds.length > 0) noted.seconds = [];
		this.inc(counter, labels, count);
		this.observe(histogram, labels, seconds);
	}

	private applyModelTally(provider: string, model: string, noted: ModelTally): void {
		const labels = { provider, model };
		for (const [outcome, calls] of noted.calls) {
			this.applyTally(calls, { provider, model, outcome }, this.modelCalls, this.modelDuration);
		}
		if (noted.firstToken.length > 0) {
			const seconds = noted.firstToken;
			noted.firstToken = [];
			this.observe(this.firstToken, labels, seconds);
		}
		const { input, output, cacheRead, cacheWrite, cost, costed, retries } = noted;
		noted.input = noted.output = noted.cacheRead = noted.cacheWrite = noted.cost = noted.retries = 0;
		noted.costed = false;
		if (input > 0) this.inc(this.tokens, { provider, model, type: "input" }, input);
		if (output > 0) this.inc(this.tokens, { provider, model, type: "output" }, output);
		if (cacheRead > 0) this.inc(this.tokens, { provider, model, type: "cache_read" }, cacheRead);
		if (cacheWrite > 0) this.inc(this.tokens, { provider, model, type: "cache_write" }, cacheWrite);
		if (costed) this.inc(this.cost, labels, cost);
		if (retries > 0) this.inc(this.retries, labels, retries);
	}

	/** One update; one prom-client refuses is reported and stops no other. */
	private inc<L extends string>(counter: Counter<L>, labels: Partial<Record<L, string>>, value: number): void {
		try {
			counter.inc(labels, value);
		} catch (err) {
			this.onUpdateError?.(err);
		}
	}

	private observe<L extends string>(
		histogram: Histogram<L>,
		labels: Partial<Record<L, string>>,
		seconds: number[],
	): void {
		for (const value of seconds) {
			try {
				histogram.observe(labels, value);
			} catch (err) {
				this.onUpdateError?.(err);
			}
		}
	}

	/** Counts one noted update towards the next batch. */
	private noted(): void {
		if (++this.pending >= MAX_PENDING_UPDATES) this.applyPending();
	}

	/** Counts an answered request (an `onResponse` hook). */
	observeRequest(request: FastifyRequest, reply: FastifyReply): void {
		// The pattern the router matched; unmatched requests share one value.
		const route = request.routeOptions.url ?? "unmatched";
		const routes = entry(this.requestTallies, request.method, newMap<Map<string, Tally>>);
		const noted = entry(entry(routes, route, newMap<Tally>), String(reply.statusCode), newTally);
		noted.count++;
		noted.seconds.push(reply.elapsedTime / 1000);
		this.noted();
	}

	/** A store commit took `ms` milliseconds. */
	observeCommit(ms: number): void {
		this.commits.observe(ms / 1000);
	}

	/** A request was refused by a limit. */
	countLimited(limit: "requests" | "runs"): void {
		this.rateLimited.inc({ limit });
	}

	/** A webhook delivery attempt came to `outcome` (event types are a fixed set). */
	countWebhook(event: string, outcome: "delivered" | "retry" | "failed"): void {
		this.webhookAttempts.inc({ event, outcome });
	}

	private onEvent(session: LiveSession, event: AgentEvent): void {
		switch (event.type) {
			case "turn_start": {
				const state = this.callState(session);
				state.turnStartedAt = performance.now();
				state.awaitingFirstToken = true;
				return;
			}
			case "message_end":
				if (event.message.role === "assistant") this.onModelCallEnd(session, event.message as AssistantMessage);
				return;
			case "tool_execution_start":
				this.callState(session).toolStartedAt.set(event.toolCallId, performance.now());
				return;
			case "tool_execution_end": {
				const state = this.calls.get(session);
				const startedAt = state?.toolStartedAt.get(event.toolCallId);
				state?.toolStartedAt.delete(event.toolCallId);
				const outcomes = entry(this.toolTallies, this.tools.value(event.toolName), newMap<Tally>);
				const noted = entry(outcomes, event.isError ? "error" : "ok", newTally);
				noted.count++;
				if (startedAt !== undefined) noted.seconds.push((performance.now() - startedAt) / 1000);
				this.noted();
				return;
			}
		}
	}

	/** The first streamed output of a model call. */
	private onFirstToken(session: LiveSession, message: AssistantMessage): void {
		const state = this.calls.get(session);
		if (!state?.awaitingFirstToken) return;
		state.awaitingFirstToken = false;
		this.modelTally(message).firstToken.push((performance.now() - state.turnStartedAt) / 1000);
		this.noted();
	}

	/** The tally of `message`'s provider and model. */
	private modelTally(message: AssistantMessage): ModelTally {
		const models = entry(this.modelTallies, message.provider, newMap<ModelTally>);
		return entry(models, this.models.value(message.model), newModelTally);
	}

	private onModelCallEnd(session: LiveSession, message: AssistantMessage): void {
		const state = this.calls.get(session);
		let seconds: number | undefined;
		if (state) {
			state.awaitingFirstToken = false;
			seconds = (performance.now() - state.turnStartedAt) / 1000;
		}
		// What is counted is read now: the message (its content) is not kept until the batch.
		const noted = this.modelTally(message);
		const calls = entry(noted.calls, message.stopReason, newTally);
		calls.count++;
		if (seconds !== undefined) calls.seconds.push(seconds);
		const usage = message.usage;
		if (usage) {
			// A provider may report a negative count (a server's bad arithmetic): a counter cannot go down.
			if (usage.input > 0) noted.input += usage.input;
			if (usage.output > 0) noted.output += usage.output;
			if (usage.cacheRead > 0) noted.cacheRead += usage.cacheRead;
			if (usage.cacheWrite > 0) noted.cacheWrite += usage.cacheWrite;
			const cost = usage.cost?.total ?? 0;
			if (cost > 0) noted.cost += cost;
			noted.costed = true;
		}
		for (const diagnostic of message.diagnostics ?? []) {
			if (diagnostic.type === "retries" && Array.isArray(diagnostic.retries))
				noted.retries += diagnostic.retries.length;
		}
		this.noted();
	}

	private callState(session: LiveSession): CallState {
		let state = this.calls.get(session);
		if (!state) {
			state = { turnStartedAt: performance.now(), awaitingFirstToken: false, toolStartedAt: new Map() };
			this.calls.set(session, state);
		}
		return state;
	}
}
