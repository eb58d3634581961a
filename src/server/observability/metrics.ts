/**
 * Prometheus metrics of one server instance: a `Registry` of its own (never prom-client's global
 * one, so two apps in one process share nothing), filled from what already flows through the
 * server rather than from code in every provider:
 *
 * - HTTP requests, from an `onResponse` hook (route pattern, never the URL);
 * - model calls, tokens, cost, retries and tool calls, from a {@link SessionExtension}'s `onEvent`
 *   (the AgentEvents every session already emits);
 * - runs by outcome, from the extension's `onRunEnd`, and by tenant (the session owner's, a label
 *   bounded like model names; sessions without a tenant are not counted there), with their tokens;
 * - sessions, runs and queued messages, read from the sessions held at scrape time;
 * - SSE connections, events, bytes and drops, from plain counters the SSE connections bump and
 *   the sockets' byte counts ({@link SseStats}), read at scrape time: the per-event cost is an
 *   integer add;
 * - store commit latency, from the store's optional commit observer;
 * - event-loop lag and the process metrics (prom-client's default collectors, on this registry).
 *
 * Every update goes to prom-client as it happens.
 *
 * Every label has a bounded set of values, and none says what one API key did to the holders of
 * others: a tool is labelled with its name only when the server configures it (built-in, library,
 * HTTP or MCP tool), any other — a client's declared tool, a name a model made up — is
 * {@link CLIENT_TOOL_LABEL}. Model names are bounded too: past {@link MAX_LABEL_VALUES} distinct
 * values new ones are reported as `other`.
 */
import { performance } from "node:perf_hooks";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { AgentEvent } from "../../agent/types.js";
import type { AssistantMessage } from "../../ai/types.js";
import type { RunStatus } from "../../store/types.js";
import { type SseStats, sseBytesWritten } from "../http/sse/connection.js";
import type { LiveSession, SessionExtension } from "../runtime/session/live-session.js";

/** Distinct values one label may take before further ones are reported as `other`. */
export const MAX_LABEL_VALUES = 100;

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

/** The `outcome` label of `wheelhouse_runs_total` for a run's end status. */
const RUN_OUTCOMES = {
	completed: "completed",
	error: "failed",
	aborted: "aborted",
	interrupted: "interrupted",
} as const satisfies Record<Exclude<RunStatus, "running">, string>;

/** A positive finite amount, which a counter can take. */
function countable(value: unknown): value is number {
	return typeof value === "number" && Number.isFinite(value) && value > 0;
}

/** The `tool` label of a tool the server does not configure (declared by a client, or made up by a model). */
export const CLIENT_TOOL_LABEL = "client";

export interface ServerMetricsOptions {
	/** The sessions held in memory (read at scrape time). */
	liveSessions(): Iterable<LiveSession>;
	/** Whether the server configures a tool of this name (else its calls are counted as {@link CLIENT_TOOL_LABEL}). */
	isServerTool(name: string): boolean;
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
	private readonly runs: Counter<"outcome">;
	private readonly tenantRuns: Counter<"tenant" | "outcome">;
	private readonly tenantTokens: Counter<"tenant" | "type">;
	private readonly tenants = new BoundedLabel();
	private readonly calls = new WeakMap<LiveSession, CallState>();
	private readonly models = new BoundedLabel();
	private readonly tools = new BoundedLabel();
	private readonly isServerTool: (name: string) => boolean;

	constructor(options: ServerMetricsOptions) {
		this.isServerTool = options.isServerTool;
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
		this.runs = new Counter({
			name: "wheelhouse_runs_total",
			help: "Runs ended, by outcome: completed, failed (an error ended it), aborted (by a client), interrupted (a server stop or a lost replica cut it; counted when this process announces it).",
			labelNames: ["outcome"],
			registers,
		});
		for (const outcome of Object.values(RUN_OUTCOMES)) this.runs.inc({ outcome }, 0);
		this.tenantRuns = new Counter({
			name: "wheelhouse_tenant_runs_total",
			help: `Runs ended, by the tenant of the session's owner and outcome (as wheelhouse_runs_total); at most ${MAX_LABEL_VALUES} tenants, the rest as "other". Sessions without a tenant are not counted here.`,
			labelNames: ["tenant", "outcome"],
			registers,
		});
		this.tenantTokens = new Counter({
			name: "wheelhouse_tenant_tokens_total",
			help: "Tokens of model calls in sessions of a tenant, by type (input, output): the tenant label as in wheelhouse_tenant_runs_total.",
			labelNames: ["tenant", "type"],
			registers,
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
			help: 'Tool calls executed, by tool and outcome (ok or error); tools the server does not configure (a client\'s) are counted as tool="client".',
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
			onRunEnd: (session, _runId, status) => {
				this.runs.inc({ outcome: RUN_OUTCOMES[status] });
				const tenant = session.sharing.tenant;
				if (tenant !== null) this.tenantRuns.inc({ tenant: this.tenants.value(tenant), outcome: RUN_OUTCOMES[status] });
			},
		};
	}

	/** The registry's text (a scrape). */
	scrape(): Promise<string> {
		return this.registry.metrics();
	}

	/** Counts an answered request (an `onResponse` hook). */
	observeRequest(request: FastifyRequest, reply: FastifyReply): void {
		// The pattern the router matched; unmatched requests share one value.
		const labels = {
			method: request.method,
			route: request.routeOptions.url ?? "unmatched",
			status_code: String(reply.statusCode),
		};
		this.httpRequests.inc(labels);
		this.httpDuration.observe(labels, reply.elapsedTime / 1000);
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
				const tool = this.isServerTool(event.toolName) ? this.tools.value(event.toolName) : CLIENT_TOOL_LABEL;
				const labels = { tool, outcome: event.isError ? "error" : "ok" };
				this.toolCalls.inc(labels);
				if (startedAt !== undefined) this.toolDuration.observe(labels, (performance.now() - startedAt) / 1000);
				return;
			}
		}
	}

	/** The first streamed output of a model call. */
	private onFirstToken(session: LiveSession, message: AssistantMessage): void {
		const state = this.calls.get(session);
		if (!state?.awaitingFirstToken) return;
		state.awaitingFirstToken = false;
		this.firstToken.observe(this.modelLabels(message), (performance.now() - state.turnStartedAt) / 1000);
	}

	/** The `provider` and `model` labels of `message`. */
	private modelLabels(message: AssistantMessage): { provider: string; model: string } {
		return { provider: message.provider, model: this.models.value(message.model) };
	}

	private onModelCallEnd(session: LiveSession, message: AssistantMessage): void {
		const state = this.calls.get(session);
		const labels = this.modelLabels(message);
		const call = { ...labels, outcome: message.stopReason };
		this.modelCalls.inc(call);
		if (state) {
			state.awaitingFirstToken = false;
			this.modelDuration.observe(call, (performance.now() - state.turnStartedAt) / 1000);
		}
		const usage = message.usage;
		if (usage) {
			// A provider may report a negative or absurd count (a server's bad arithmetic): a counter
			// takes only finite amounts and cannot go down.
			const { provider, model } = labels;
			if (countable(usage.input)) this.tokens.inc({ provider, model, type: "input" }, usage.input);
			if (countable(usage.output)) this.tokens.inc({ provider, model, type: "output" }, usage.output);
			const tenant = session.sharing.tenant;
			if (tenant !== null) {
				const label = this.tenants.value(tenant);
				if (countable(usage.input)) this.tenantTokens.inc({ tenant: label, type: "input" }, usage.input);
				if (countable(usage.output)) this.tenantTokens.inc({ tenant: label, type: "output" }, usage.output);
			}
			if (countable(usage.cacheRead)) this.tokens.inc({ provider, model, type: "cache_read" }, usage.cacheRead);
			if (countable(usage.cacheWrite)) this.tokens.inc({ provider, model, type: "cache_write" }, usage.cacheWrite);
			const cost = usage.cost?.total;
			// A call with usage makes the series exist, at 0 when it cost nothing (or nothing usable).
			this.cost.inc(labels, countable(cost) ? cost : 0);
		}
		let retries = 0;
		for (const diagnostic of message.diagnostics ?? []) {
			if (diagnostic.type === "retries" && Array.isArray(diagnostic.retries)) retries += diagnostic.retries.length;
		}
		if (retries > 0) this.retries.inc(labels, retries);
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
