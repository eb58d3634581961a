/**
 * No SSE client sees a message that is not an event. The server's `retry:` and its comments
 * (heartbeats, the closing and drop notes) are lines that never end a frame of their own, so the
 * blank lines of a stream are exactly the ends of its events. Checked on the bytes of real streams
 * — a prompt's stream, a subscription with heartbeats, the OpenAI facade's stream and a subscriber
 * dropped for not reading — with the exact parser of `@microsoft/fetch-event-source` 2 (which
 * dispatches every blank line), and with the spec-following clients: the `eventsource` 3 package
 * and our own `readSse`. Reconnecting keeps working: `retry:` still reaches every client.
 */
import { once } from "node:events";
import { get, type IncomingMessage } from "node:http";
import { getLines, getMessages } from "@microsoft/fetch-event-source/lib/cjs/parse.js";
import { EventSource } from "eventsource";
import { afterEach, describe, expect, it } from "vitest";
import { SSE_EVENT_NAMES } from "../../../../src/wire/events.js";
import { startServer, type TestServer } from "../../../helpers/server.js";
import { openSse, promptSse } from "../../../helpers/sse.js";

let server: TestServer | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) cleanup();
	await server?.close();
	server = undefined;
});

interface Parsed {
	data: string;
	event: string;
	id: string;
	retry?: number;
}

/** What fetch-event-source's own parser dispatches for `text`, and the `retry:` it was told. */
function fetchEventSourceParse(text: string): { messages: Parsed[]; retry: number | undefined } {
	const messages: Parsed[] = [];
	let retry: number | undefined;
	const onChunk = getLines(
		getMessages(
			() => {},
			(ms: number) => {
				retry = ms;
			},
			(message: Parsed) => messages.push(message),
		),
	);
	onChunk(new TextEncoder().encode(text));
	return { messages, retry };
}

/**
 * Checks a stream's bytes: every message fetch-event-source dispatches is an event with a name
 * and JSON data (or `[DONE]` on the OpenAI stream), and their number is the number of `data:`
 * frames. Returns the messages.
 */
function expectOnlyEvents(text: string, options: { named: boolean }): Parsed[] {
	const { messages, retry } = fetchEventSourceParse(text);
	expect(retry, "retry: reaches the client").toBe(2000);
	expect(messages.length).toBe([...text.matchAll(/^data: /gm)].length);
	for (const message of messages) {
		expect(message.data, JSON.stringify(message)).not.toBe("");
		if (message.data !== "[DONE]") expect(() => JSON.parse(message.data), message.data).not.toThrow();
		if (options.named) expect(SSE_EVENT_NAMES).toContain(message.event);
	}
	return messages;
}

/** The raw text of a response until `done(text)` is true or the response ends. */
async function readRaw(response: IncomingMessage, done: (text: string) => boolean = () => false): Promise<string> {
	response.setEncoding("utf8");
	let text = "";
	for await (const chunk of response) {
		text += chunk;
		if (done(text)) break;
	}
	return text;
}

function rawGet(url: string): Promise<IncomingMessage> {
	return new Promise((resolve, reject) => {
		const req = get(url, { agent: false, headers: { accept: "text/event-stream" } });
		req.on("response", resolve).on("error", reject);
		cleanups.push(() => req.destroy());
	});
}

async function rawPost(url: string, body: unknown): Promise<string> {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json", accept: "text/event-stream" },
		body: JSON.stringify(body),
	});
	expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
	return res.text();
}

describe("SSE streams dispatch nothing but events", () => {
	it("a prompt's stream and a subscription, with heartbeats between the events, in fetch-event-source's parser", async () => {
		server = await startServer({ config: { heartbeatMs: 5, fauxDelayMs: 20 } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const subscription = await rawGet(`${server.url}/v1/sessions/${id}/events`);
		const subscribed = readRaw(subscription);

		const prompted = await rawPost(`${server.url}/v1/sessions/${id}/prompt`, { message: "one two three four five" });
		expect(prompted).toMatch(/^: heartbeat$/m);
		const messages = expectOnlyEvents(prompted, { named: true });
		expect(messages[0]!.event).toBe("agent_start");
		expect(messages.at(-1)!.event).toBe("agent_end");
		// Every event keeps its id, so fetch-event-source's Last-Event-ID resumes where it was.
		for (const message of messages) expect(message.id).toMatch(/^\d+$/);

		// Deleting the session ends its subscription with a closing note.
		expect((await server.request("DELETE", `/v1/sessions/${id}`)).status).toBeLessThan(300);
		const live = await subscribed;
		expect(live).toMatch(/^: heartbeat$/m);
		expect(live).toMatch(/^: closing: /m);
		const liveMessages = expectOnlyEvents(live, { named: true });
		expect(liveMessages[0]!.event).toBe("session_snapshot");
		expect(liveMessages.map((m) => m.id).slice(1)).toEqual(messages.map((m) => m.id));
	});

	it("the OpenAI-compatible stream", async () => {
		server = await startServer({ config: { heartbeatMs: 5, fauxDelayMs: 20 } });
		const text = await rawPost(`${server.url}/openai/v1/chat/completions`, {
			model: "faux/echo",
			stream: true,
			messages: [{ role: "user", content: "one two three four five" }],
		});
		const messages = expectOnlyEvents(text, { named: false });
		expect(messages.at(-1)!.data).toBe("[DONE]");
	});

	it("a subscriber dropped for not reading: the drop note and stream_dropped make one event", async () => {
		server = await startServer({ config: { sseBufferBytes: 64 * 1024, bodyLimit: 8 * 1024 * 1024 } });
		const s = server;
		const id = (await s.request("POST", "/v1/sessions", { body: {} })).body.id;
		const stalled = await rawGet(`${s.url}/v1/sessions/${id}/events`);
		stalled.pause();
		// Enough bytes to fill the socket's buffers too (the stand-in model echoes it a word a delta).
		const message = `${"x".repeat(1024)} `.repeat(4096);
		expect((await s.request("POST", `/v1/sessions/${id}/prompt`, { body: { message } })).status).toBe(202);
		await s.app.wheelhouse.sessions.get(id, null).waitForIdle();
		const ended = once(stalled, "end");
		const text = await readRaw(stalled);
		await ended.catch(() => {});
		expect(text).toMatch(/^: dropped: slow consumer$/m);
		const messages = expectOnlyEvents(text, { named: true });
		expect(messages.at(-1)!.event).toBe("stream_dropped");
	});

	it("eventsource 3 and readSse get every event with data, none unnamed, and the retry: value", async () => {
		server = await startServer({ config: { heartbeatMs: 5, fauxDelayMs: 20 } });
		const s = server;
		const id = (await s.request("POST", "/v1/sessions", { body: {} })).body.id;

		const source = new EventSource(`${s.url}/v1/sessions/${id}/events`);
		cleanups.push(() => source.close());
		const unnamed: string[] = [];
		const named: { event: string; data: string }[] = [];
		source.onmessage = (e) => unnamed.push(e.data);
		const ended = new Promise<void>((resolve) => {
			for (const name of SSE_EVENT_NAMES) {
				source.addEventListener(name, (e) => {
					named.push({ event: e.type, data: e.data });
					if (name === "agent_end") resolve();
				});
			}
		});
		await new Promise<void>((resolve) => {
			source.onopen = () => resolve();
		});

		const reader = await promptSse(s.url, id, { message: "one two three four five" });
		cleanups.push(() => reader.close());
		await reader.waitForEnd(10_000);
		await ended;

		expect(unnamed).toEqual([]);
		expect(named[0]!.event).toBe("session_snapshot");
		for (const event of named) expect(() => JSON.parse(event.data), event.event).not.toThrow();
		expect(named.slice(1).map((e) => e.event)).toEqual(reader.types());

		expect(reader.retry).toBe(2000);
		expect(reader.comments).toContain("heartbeat");
		for (const event of reader.events) expect(event.data?.type).toBe(event.event);
	});

	it("a resumed subscription (Last-Event-ID) gets exactly the events after it, and only events", async () => {
		server = await startServer({ config: { heartbeatMs: 5 } });
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const first = await promptSse(server.url, id, { message: "one two three" });
		await first.waitForEnd();
		const ids = first.ids();
		const middle = ids[Math.floor(ids.length / 2)]!;

		const resumed = await openSse(`${server.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(middle) },
		});
		cleanups.push(() => resumed.close());
		await resumed.waitFor((e) => e.id === ids.at(-1));
		expect(resumed.ids()).toEqual(ids.filter((n) => n > middle));
		expect(resumed.retry).toBe(2000);
	});
});
