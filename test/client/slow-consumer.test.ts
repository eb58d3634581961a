/**
 * A reader that stops reading is dropped by the server (bounded buffering) with a
 * `stream_dropped` event; `streamEvents` resumes on `/events` with `Last-Event-ID` and the caller
 * still sees every event once, in order.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MessageAssembler } from "../../src/client/message-assembler.js";
import { sessionEvents, streamPrompt } from "../../src/client/session-streams.js";
import { buildApp } from "../../src/server/http/app.js";

let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
	app = await buildApp({
		env: {},
		config: { logLevel: "silent", fauxDelayMs: 0, heartbeatMs: 0, sseBufferBytes: 64 * 1024, eventRetention: 200_000 },
	});
	await app.listen({ port: 0, host: "127.0.0.1" });
	baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
	await app?.close();
});

it("a stalled reader is dropped, resumes with Last-Event-ID, and loses and duplicates nothing", async () => {
	const res = await fetch(`${baseUrl}/v1/sessions`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ model: "faux/echo" }),
	});
	const { id } = (await res.json()) as { id: string };
	// ~7 MB of SSE: more than a stalled reader's socket buffers hold here (the receive window of a
	// reader that stops reading does not auto-tune up), and so past the server's 64 KiB allowance.
	const words = Array.from({ length: 40_000 }, (_, i) => `w${i}`);
	const reconnects: (number | undefined)[] = [];
	const slow = streamPrompt({
		baseUrl,
		sessionId: id,
		message: words.join(" "),
		retryDelayMs: 0,
		onReconnect: ({ lastEventId }) => reconnects.push(lastEventId),
	});
	const iterator = slow[Symbol.asyncIterator]();
	const first = await iterator.next();
	expect(first.value?.type).toBe("agent_start");

	// Stall the slow reader until the run is over, watching it on a second (fast) subscription.
	for await (const event of sessionEvents({ baseUrl, sessionId: id, until: (e) => e.type === "agent_end" })) {
		void event;
	}

	const ids: number[] = [first.value!.id!];
	const types: string[] = [];
	const assembler = new MessageAssembler();
	assembler.apply(first.value!.data);
	for (;;) {
		const { value, done } = await iterator.next();
		if (done) break;
		types.push(value.type);
		if (value.id !== undefined) ids.push(value.id);
		assembler.apply(value.data);
	}
	expect(types).toContain("stream_dropped");
	expect(reconnects.length).toBeGreaterThanOrEqual(1);
	// Every id from agent_start to agent_end, once, in order.
	expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => ids[0] + i));
	expect(types.at(-1)).toBe("agent_end");
	const text = (assembler.message as { content: { text: string }[] }).content[0].text;
	expect(text.trim().split(" ")).toEqual(words);
}, 120_000);
