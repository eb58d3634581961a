/**
 * The client helper against the real server (buildApp on port 0, faux/echo model): what the
 * assembler rebuilds from the compact wire format is what the server's agent streamed and stored.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentEvent } from "../../src/agent/types.js";
import { MessageAssembler } from "../../src/client/message-assembler.js";
import { sessionEvents, streamPrompt } from "../../src/client/session-streams.js";
import { buildApp } from "../../src/server/http/app.js";

let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
	app = await buildApp({ env: {}, config: { logLevel: "silent", fauxDelayMs: 0, heartbeatMs: 0 } });
	await app.listen({ port: 0, host: "127.0.0.1" });
	baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
	await app?.close();
});

async function createSession(): Promise<string> {
	const res = await fetch(`${baseUrl}/v1/sessions`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ model: "faux/echo" }),
	});
	expect(res.status).toBe(201);
	return ((await res.json()) as { id: string }).id;
}

async function transcript(id: string): Promise<any[]> {
	const res = await fetch(`${baseUrl}/v1/sessions/${id}/messages`);
	expect(res.status).toBe(200);
	const body = (await res.json()) as { messages?: any[]; items?: any[]; data?: any[] };
	return body.messages ?? body.items ?? body.data ?? (body as any);
}

describe("wheelhouse-agents/client against the real server", () => {
	it("rebuilds every partial of an echoed answer and ends with the stored message", async () => {
		const id = await createSession();
		const words = Array.from({ length: 60 }, (_, i) => `word${i}`);
		const assembler = new MessageAssembler();
		const expanded: AgentEvent[] = [];
		let deltas = 0;
		for await (const event of streamPrompt({ baseUrl, sessionId: id, message: words.join(" "), reconnect: false })) {
			const full = assembler.apply(event.data) as AgentEvent;
			expanded.push(full);
			if (full.type === "message_update" && full.assistantMessageEvent.type === "text_delta") {
				deltas++;
				const text = (full.assistantMessageEvent.partial.content[0] as { text: string }).text;
				// The partial grows by exactly the deltas seen so far.
				expect(text.trim().split(/\s+/)).toEqual(words.slice(0, deltas));
				expect(full.message).toEqual(full.assistantMessageEvent.partial);
			}
		}
		expect(deltas).toBe(words.length);
		expect(expanded.at(-1)?.type).toBe("agent_end");
		const stored = (await transcript(id)).at(-1);
		expect(stored.role).toBe("assistant");
		expect(assembler.message).toEqual(stored);
		expect(assembler.incomplete).toBe(false);
	});

	it("rebuilds a streamed tool call's arguments", async () => {
		const id = await createSession();
		const assembler = new MessageAssembler();
		let toolCallAtEnd: unknown;
		for await (const event of streamPrompt({
			baseUrl,
			sessionId: id,
			message: '/tool calculate {"expression": "(1 + 2) * 7"}',
			reconnect: false,
		})) {
			const full = assembler.apply(event.data) as AgentEvent;
			if (full.type === "message_update" && full.assistantMessageEvent.type === "toolcall_end") {
				toolCallAtEnd = full.assistantMessageEvent.partial.content[full.assistantMessageEvent.contentIndex];
				expect(toolCallAtEnd).toEqual(full.assistantMessageEvent.toolCall);
			}
		}
		expect(toolCallAtEnd).toMatchObject({
			type: "toolCall",
			name: "calculate",
			arguments: { expression: "(1 + 2) * 7" },
		});
		const messages = await transcript(id);
		expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
		expect(assembler.message).toEqual(messages.at(-1));
	});

	it("lets a late joiner continue from the snapshot's in-flight message", async () => {
		const id = await createSession();
		const words = Array.from({ length: 400 }, (_, i) => `w${i}`);
		const run = streamPrompt({ baseUrl, sessionId: id, message: words.join(" "), reconnect: false });
		// Read the run until the answer is streaming, then join on /events.
		const runEvents = run[Symbol.asyncIterator]();
		for (;;) {
			const { value } = await runEvents.next();
			if (value?.type === "message_update") break;
		}
		const joiner = new MessageAssembler();
		let first: string | undefined;
		for await (const event of sessionEvents({
			baseUrl,
			sessionId: id,
			reconnect: false,
			until: (e) => e.type === "agent_end",
		})) {
			first ??= event.type;
			joiner.apply(event.data);
		}
		for await (const _ of { [Symbol.asyncIterator]: () => runEvents }) {
			// drain the run's own stream
		}
		expect(first).toBe("session_snapshot");
		expect(joiner.incomplete).toBe(false);
		const stored = (await transcript(id)).at(-1);
		expect(joiner.message).toEqual(stored);
		expect((stored.content[0] as { text: string }).text.trim().split(" ")).toHaveLength(400);
	});
});
