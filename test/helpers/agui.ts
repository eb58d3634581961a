/**
 * AG-UI clients for tests: `HttpAgent` from `@ag-ui/client`, unmodified, pointed at a test server,
 * with every response body also kept raw so a test can check the framing the client parsed. The
 * client verifies each stream itself (a violation rejects `runAgent`); what it only warns about
 * (a field it strips, an event type it drops) is caught by `quietConsole`.
 */
import {
	type AgentSubscriber,
	HttpAgent,
	type HttpAgentConfig,
	type RunAgentParameters,
	runHttpRequest,
	transformHttpEventStream,
} from "@ag-ui/client";
import type { BaseEvent, RunAgentInput } from "@ag-ui/core";
import { EventSchema } from "@ag-ui/core/schemas";
import { expect, vi } from "vitest";
import type { TestServer } from "./server.js";

/** Response bodies, in request order, as text (each resolves when its response ended). */
export type RawBodies = Promise<string>[];

/** A `fetch` that hands the client the response and keeps a copy of its body. */
function recordingFetch(bodies: RawBodies) {
	return async (url: string, init: RequestInit): Promise<Response> => {
		const response = await fetch(url, init);
		if (!response.body) return response;
		const [forClient, forTest] = response.body.tee();
		bodies.push(
			new Response(forTest).text().catch(() => ""), // an aborted body ends the copy too
		);
		return new Response(forClient, { status: response.status, headers: response.headers });
	};
}

export interface TestAgent {
	agent: HttpAgent;
	bodies: RawBodies;
}

/** An `HttpAgent` for `POST /agui/v1/run` of `server`, with the bearer `key`. */
export function aguiAgent(server: TestServer, key: string, config: Partial<HttpAgentConfig> = {}): TestAgent {
	const bodies: RawBodies = [];
	const agent = new HttpAgent({
		url: `${server.url}/agui/v1/run`,
		headers: { authorization: `Bearer ${key}` },
		fetch: recordingFetch(bodies),
		...config,
	});
	return { agent, bodies };
}

/** Runs the agent once; the events its subscribers saw (after its verifier) and the result. */
export async function runOnce(
	agent: HttpAgent,
	parameters: RunAgentParameters = {},
	subscriber: AgentSubscriber = {},
): Promise<{ events: BaseEvent[]; newMessages: unknown[] }> {
	const events: BaseEvent[] = [];
	const result = await agent.runAgent(parameters, {
		...subscriber,
		onEvent: (params) => {
			events.push(params.event);
			return subscriber.onEvent?.(params);
		},
	});
	return { events, newMessages: result.newMessages };
}

/**
 * An `HttpAgent` whose `connectAgent()` reads `GET /agui/v1/threads/:threadId/events` (the
 * protocol has no reconnect of its own; `connect` is the client's hook for one).
 */
export class ReconnectingAgent extends HttpAgent {
	constructor(
		private readonly baseUrl: string,
		config: HttpAgentConfig,
	) {
		super(config);
	}

	protected override connect(input: RunAgentInput) {
		const url = `${this.baseUrl}/agui/v1/threads/${encodeURIComponent(input.threadId)}/events`;
		return transformHttpEventStream(
			runHttpRequest(() => this.fetch(url, { headers: this.headers, signal: this.abortController.signal })),
		);
	}
}

/**
 * Checks a raw AG-UI response body the way `@ag-ui/client` reads it, and more strictly: LF line
 * ends only, frames separated by a blank line, each frame with at most one `data:` line (other
 * lines only comments or `retry:`), each data a JSON event that `@ag-ui/core`'s schema accepts.
 * Returns the events.
 */
export function checkFraming(body: string): BaseEvent[] {
	expect(body).not.toContain("\r");
	expect(body.endsWith("\n\n"), "the body ends with a blank line").toBe(true);
	const events: BaseEvent[] = [];
	for (const frame of body.slice(0, -2).split("\n\n")) {
		const lines = frame.split("\n");
		const data = lines.filter((line) => line.startsWith("data:"));
		const other = lines.filter((line) => !line.startsWith("data:"));
		expect(data.length, `one data line per frame: ${JSON.stringify(frame)}`).toBeLessThanOrEqual(1);
		for (const line of other) expect(line, "no field but data:, comments and retry:").toMatch(/^(:|retry: \d+$)/);
		if (data[0]) events.push(EventSchema.parse(JSON.parse(data[0].slice("data: ".length))) as BaseEvent);
	}
	return events;
}

/**
 * Fails the test if the AG-UI client warned or logged an error: it strips unknown fields and
 * drops unknown events with a warning instead of failing. Call `check()` at the end of a test.
 */
export function quietConsole(): { check(): void; restore(): void } {
	const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
	const error = vi.spyOn(console, "error").mockImplementation(() => {});
	return {
		check() {
			expect(warn.mock.calls, "console.warn").toEqual([]);
			expect(error.mock.calls, "console.error").toEqual([]);
		},
		restore() {
			warn.mockRestore();
			error.mockRestore();
		},
	};
}

/** The `type`s of events, in order. */
export function typesOf(events: readonly BaseEvent[]): string[] {
	return events.map((event) => event.type);
}
