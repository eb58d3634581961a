import { afterEach, describe, expect, it } from "vitest";
import { MessageAssembler } from "../../../src/client/message-assembler.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

async function newSession(body: unknown = {}): Promise<string> {
	const res = await server.request("POST", "/v1/sessions", { body });
	expect(res.status).toBe(201);
	return res.body.id;
}

describe("POST /prompt streaming", () => {
	it("streams one run from agent_start to agent_end with increasing ids, one text delta per word, then closes", async () => {
		server = await startServer();
		const id = await newSession();
		const stream = await promptSse(server.url, id, { message: "the quick brown fox" });
		await stream.waitForEnd();
		expect(stream.retry).toBe(2000);
		const types = stream.types();
		expect(types[0]).toBe("agent_start");
		expect(types.at(-1)).toBe("agent_end");
		expect(types).toEqual(expect.arrayContaining(["turn_start", "message_start", "message_end", "turn_end"]));
		const ids = stream.ids();
		expect(ids).toHaveLength(stream.events.length);
		for (let i = 1; i < ids.length; i++) expect(ids[i]).toBe(ids[i - 1] + 1);

		const deltas = stream.events
			.filter((e) => e.event === "message_update" && e.data.assistantMessageEvent.type === "text_delta")
			.map((e) => e.data.assistantMessageEvent.delta);
		expect(deltas).toEqual(["the ", "quick ", "brown ", "fox"]);
		// Compact wire format: no partial, no full message on updates.
		for (const e of stream.events.filter((e) => e.event === "message_update")) {
			expect(e.data.message).toBeUndefined();
			expect(e.data.assistantMessageEvent.partial).toBeUndefined();
		}
		// The client helper rebuilds the final message from the compact stream.
		const assembler = new MessageAssembler();
		let lastAssistant: any;
		for (const e of stream.events) {
			const expanded = assembler.apply(e.data);
			if (expanded.type === "message_end" && (expanded.message as any).role === "assistant")
				lastAssistant = expanded.message;
		}
		expect(lastAssistant.content).toEqual([{ type: "text", text: "the quick brown fox" }]);

		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.messageCount).toBe(2);
		expect(state.lastEventId).toBe(ids.at(-1));
		expect(state.usage.totalTokens).toBeGreaterThan(0);
	});

	it("without Accept: text/event-stream answers 202 with the run's first event id, followable on /events", async () => {
		server = await startServer();
		const id = await newSession();
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);
		await events.waitForType("session_snapshot");
		const res = await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "hello world" } });
		expect(res.status).toBe(202);
		expect(res.body.status).toBe("started");
		const end = await events.waitForType("agent_end");
		const start = events.events.find((e) => e.event === "agent_start")!;
		expect(start.id).toBe(res.body.firstEventId);
		expect(end.data.messages.at(-1).content[0].text).toBe("hello world");
		events.close();
	});

	it("runs tools: /tool NAME {json} calls the tool and answers with its result", async () => {
		server = await startServer();
		const id = await newSession();
		const stream = await promptSse(server.url, id, { message: '/tool calculate {"expression": "6*7"}' });
		await stream.waitForEnd();
		const toolEnd = stream.events.find((e) => e.event === "tool_execution_end")!;
		expect(toolEnd.data.toolName).toBe("calculate");
		expect(toolEnd.data.isError).toBe(false);
		const end = stream.events.at(-1)!;
		expect(end.event).toBe("agent_end");
		expect(end.data.messages.at(-1).content[0].text).toBe("Tool results: calculate: 42");
	});

	it("keeps two sessions isolated while both stream at once", async () => {
		server = await startServer({ config: { fauxDelayMs: 1 } });
		const a = await newSession();
		const b = await newSession();
		const [sa, sb] = await Promise.all([
			promptSse(server.url, a, { message: "alpha alpha alpha alpha" }),
			promptSse(server.url, b, { message: "beta beta" }),
		]);
		await Promise.all([sa.waitForEnd(), sb.waitForEnd()]);
		const text = (s: typeof sa) =>
			s.events
				.filter((e) => e.event === "message_update" && e.data.assistantMessageEvent.type === "text_delta")
				.map((e) => e.data.assistantMessageEvent.delta)
				.join("");
		expect(text(sa)).toBe("alpha alpha alpha alpha");
		expect(text(sb)).toBe("beta beta");
		expect(sa.ids()[0]).toBe(1);
		expect(sb.ids()[0]).toBe(1);
		const ma = (await server.request("GET", `/v1/sessions/${a}/messages`)).body.messages;
		const mb = (await server.request("GET", `/v1/sessions/${b}/messages`)).body.messages;
		expect(ma.map((m: any) => m.content[0].text)).toEqual(["alpha alpha alpha alpha", "alpha alpha alpha alpha"]);
		expect(mb.map((m: any) => m.content[0].text)).toEqual(["beta beta", "beta beta"]);
	});
});
