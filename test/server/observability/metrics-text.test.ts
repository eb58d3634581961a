/**
 * The exposition text of the `wheelhouse_*` metrics for a scripted sequence of requests, model
 * calls, tool calls and run ends, byte for byte: series order (prom-client lists a metric's series
 * in the order they first moved), label order, values and histogram buckets. The clock the metrics
 * read (`performance.now`) and the requests' elapsed times are scripted, so every duration is
 * known. The expected text is a file next to this test.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { afterEach, expect, it, vi } from "vitest";
import type { AgentEvent } from "../../../src/agent/types.js";
import type { AssistantMessage, Usage } from "../../../src/ai/types.js";
import { MAX_LABEL_VALUES, ServerMetrics } from "../../../src/server/observability/metrics.js";
import type { LiveSession } from "../../../src/server/runtime/session/live-session.js";

afterEach(() => {
	vi.restoreAllMocks();
});

/** What the metrics read of a session: its identity (a key) and its tenant. */
function session(tenant: string | null): LiveSession {
	return { sharing: { ownerId: "o", tenant, visibility: "owner" } } as unknown as LiveSession;
}

function usage(input: number, output: number, cacheRead: number, cacheWrite: number, cost: number): Usage {
	return {
		input,
		output,
		cacheRead,
		cacheWrite,
		totalTokens: input + output + cacheRead + cacheWrite,
		cost: { input: cost / 2, output: cost / 2, cacheRead: 0, cacheWrite: 0, total: cost },
	};
}

function message(
	provider: string,
	model: string,
	stopReason: AssistantMessage["stopReason"],
	use?: Usage,
	retries = 0,
): AssistantMessage {
	return {
		role: "assistant",
		content: [{ type: "text", text: "x" }],
		api: "openai-completions",
		provider,
		model,
		stopReason,
		timestamp: 1,
		...(use ? { usage: use } : {}),
		...(retries > 0
			? { diagnostics: [{ type: "retries", retries: Array.from({ length: retries }, () => ({})) }] }
			: {}),
	} as AssistantMessage;
}

/** Only the server's own metrics (the process collectors' values change on their own). */
function wheelhouseLines(text: string): string {
	return text
		.split("\n")
		.filter((line) => /^(# (HELP|TYPE) )?wheelhouse_/.test(line))
		.join("\n");
}

it("writes the scripted events as the expected exposition text, byte for byte", async () => {
	let clock = 1000;
	vi.spyOn(performance, "now").mockImplementation(() => clock);
	const metrics = new ServerMetrics({ liveSessions: () => [], isServerTool: (name) => name === "calculate" });
	const ext = metrics.extension;
	const event = (s: LiveSession, e: Record<string, unknown>) => ext.onEvent!(s, e as unknown as AgentEvent);
	const first = (s: LiveSession, m: AssistantMessage) =>
		ext.onFirstUpdate!(s, { type: "message_update", message: m } as AgentEvent & { type: "message_update" });
	const request = (method: string, url: string | undefined, status: number, elapsedMs: number) =>
		metrics.observeRequest(
			{ method, routeOptions: { url } } as unknown as FastifyRequest,
			{ statusCode: status, elapsedTime: elapsedMs } as unknown as FastifyReply,
		);

	const a = session("org-a");
	const b = session(null);
	const c = session("org-b");
	request("POST", "/v1/sessions", 201, 3);
	request("POST", "/v1/sessions/:id/prompt", 200, 420);
	// A model call of A with a tool call, then a second turn.
	event(a, { type: "turn_start" });
	clock += 30;
	first(a, message("openai", "gpt-x", "stop"));
	clock += 270;
	event(a, { type: "message_end", message: message("openai", "gpt-x", "toolUse", usage(100, 20, 0, 0, 0.25)) });
	event(a, { type: "tool_execution_start", toolCallId: "t1" });
	clock += 12;
	event(a, { type: "tool_execution_end", toolCallId: "t1", toolName: "calculate", isError: false });
	event(a, { type: "tool_execution_start", toolCallId: "t2" });
	clock += 2500;
	event(a, { type: "tool_execution_end", toolCallId: "t2", toolName: "pick_color", isError: true });
	// B's call on another model, with cache reads and retries, between A's two turns.
	event(b, { type: "turn_start" });
	clock += 7;
	first(b, message("anthropic", "claude-y", "stop"));
	clock += 90;
	event(b, {
		type: "message_end",
		message: message("anthropic", "claude-y", "stop", usage(50, 5, 4000, 0, 0.001), 2),
	});
	ext.onRunEnd!(b, "rb", "completed");
	event(a, { type: "turn_start" });
	clock += 1;
	first(a, message("openai", "gpt-x", "stop"));
	clock += 1;
	event(a, { type: "message_end", message: message("openai", "gpt-x", "stop", usage(130, 40, 64, 8, 0)) });
	ext.onRunEnd!(a, "ra", "completed");
	// C: a call without usage that errs, an absurd usage, an aborted run.
	event(c, { type: "turn_start" });
	clock += 61_000;
	event(c, { type: "message_end", message: message("openai", "gpt-x", "error") });
	ext.onRunEnd!(c, "rc", "error");
	event(c, { type: "turn_start" });
	event(c, {
		type: "message_end",
		message: message("openai", "gpt-z", "aborted", { ...usage(-5, Number.NaN, 0, 0, Number.POSITIVE_INFINITY) }),
	});
	ext.onRunEnd!(c, "rc2", "aborted");
	ext.onRunEnd!(a, null, "interrupted");
	request("GET", "/v1/sessions/:id", 404, 0.8);
	request("GET", undefined, 404, 0.2);
	request("POST", "/v1/sessions", 201, 2);
	request("DELETE", "/v1/sessions/:id", 204, 130_000);
	metrics.countLimited("requests");
	metrics.countLimited("runs");
	metrics.countLimited("requests");
	metrics.countWebhook("run.completed", "delivered");
	metrics.countWebhook("run.failed", "retry");
	metrics.observeCommit(0.3);
	metrics.observeCommit(40);
	// Past the model label cap further models are "other" (sessions of their own: no call timing, so
	// only the call counter has a series per model).
	for (let i = 0; i < MAX_LABEL_VALUES; i++) {
		event(session(null), { type: "message_end", message: message("faux", `m${i}`, "stop") });
	}
	event(b, { type: "turn_start" });
	clock += 3;
	first(b, message("faux", "m-late", "stop"));
	event(b, { type: "message_end", message: message("faux", "m-late", "length", usage(1, 2, 0, 0, 0.5)) });
	event(a, { type: "message_end", message: message("openai", "gpt-x", "stop", usage(1, 1, 0, 0, 0)) });

	const text = wheelhouseLines(await metrics.scrape());
	await expect(text).toMatchFileSnapshot("./fixtures/metrics-scripted.txt");
	// A second scrape writes the same.
	expect(wheelhouseLines(await metrics.scrape())).toBe(text);
});
