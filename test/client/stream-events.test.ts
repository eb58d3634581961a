import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { streamPrompt } from "../../src/client/session-streams.js";
import { type ReceivedEvent, streamEvents, WheelhouseHttpError } from "../../src/client/stream-events.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let server: Server | undefined;

async function serve(handler: Handler): Promise<string> {
	server = createServer(handler);
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
	server?.closeAllConnections();
	await new Promise((resolve) => server?.close(resolve));
	server = undefined;
});

const frame = (id: number, type = "tick") =>
	`id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ type, n: id, text: "ünï 🎉" })}\n\n`;

function startSse(res: ServerResponse): void {
	res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
	res.write("retry: 1\n: hello\n\n");
}

async function collect(iterable: AsyncIterable<ReceivedEvent>): Promise<ReceivedEvent[]> {
	const out: ReceivedEvent[] = [];
	for await (const event of iterable) out.push(event);
	return out;
}

describe("streamEvents", () => {
	it("resumes with Last-Event-ID after drops, losing and duplicating nothing", async () => {
		const total = 30;
		const seenLastIds: (string | undefined)[] = [];
		let open: ServerResponse | undefined;
		const url = await serve((req, res) => {
			seenLastIds.push(req.headers["last-event-id"] as string | undefined);
			const after = Number(req.headers["last-event-id"] ?? 0);
			const connection = seenLastIds.length;
			startSse(res);
			open = res;
			// The first two connections stay open after their last frame until the test drops them.
			const stopAt = connection === 1 ? 7 : connection === 2 ? 19 : total;
			// Resend the last seen id once: the client must drop duplicates.
			for (let id = Math.max(1, after); id <= stopAt; id++) res.write(frame(id, id === total ? "end" : "tick"));
			if (connection === 2) res.write(frame(20).slice(0, 25)); // a cut frame is dropped
			if (stopAt === total) res.end();
		});
		const events: ReceivedEvent[] = [];
		for await (const event of streamEvents({ url: `${url}/events`, until: (e) => e.type === "end", retryDelayMs: 0 })) {
			events.push(event);
			if (event.id === 7 || event.id === 19) open?.socket?.destroy();
		}
		expect(events.map((e) => e.id)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
		expect(events[3].data).toEqual({ type: "tick", n: 4, text: "ünï 🎉" });
		expect(seenLastIds).toEqual([undefined, "7", "19"]);
	});

	it("parses frames split at every byte, including inside multi-byte characters", async () => {
		const url = await serve(async (_req, res) => {
			startSse(res);
			const bytes = Buffer.from(frame(1) + frame(2, "end"));
			for (const byte of bytes) {
				res.write(Buffer.from([byte]));
				await new Promise((resolve) => setImmediate(resolve));
			}
			res.end();
		});
		const events = await collect(streamEvents({ url, reconnect: false }));
		expect(events.map((e) => [e.id, e.type, (e.data as any).text])).toEqual([
			[1, "tick", "ünï 🎉"],
			[2, "end", "ünï 🎉"],
		]);
	});

	it("reports a malformed line and goes on", async () => {
		const url = await serve((_req, res) => {
			startSse(res);
			res.end(`${frame(1)}bogus: field\nretry: soon\n\n${frame(2, "end")}`);
		});
		const errors: string[] = [];
		const events = await collect(streamEvents({ url, reconnect: false, onParseError: (e) => errors.push(e.message) }));
		expect(events.map((e) => e.id)).toEqual([1, 2]);
		expect(errors).toHaveLength(2);
		expect(errors.join(" ")).toMatch(/bogus/);
	});

	it("never repeats the POST of a prompt: it resumes on the session's /events", async () => {
		const requests: string[] = [];
		let open: ServerResponse | undefined;
		const url = await serve((req, res) => {
			requests.push(`${req.method} ${req.url} ${req.headers["last-event-id"] ?? "-"}`);
			if (req.method === "POST") {
				let body = "";
				req.on("data", (chunk) => (body += chunk));
				req.on("end", () => {
					expect(JSON.parse(body)).toEqual({ message: "hi", ifBusy: "reject" });
					startSse(res);
					res.write(frame(1, "agent_start") + frame(2, "message_start"));
					open = res;
				});
				return;
			}
			startSse(res);
			res.end(frame(3, "message_end") + frame(4, "agent_end") + frame(5, "agent_start"));
		});
		const events: ReceivedEvent[] = [];
		const stream = streamPrompt({
			baseUrl: url,
			sessionId: "s 1",
			message: "hi",
			body: { ifBusy: "reject" },
			apiKey: "k",
			retryDelayMs: 0,
		});
		for await (const event of stream) {
			events.push(event);
			if (event.id === 2) open?.socket?.destroy();
		}
		expect(events.map((e) => e.type)).toEqual(["agent_start", "message_start", "message_end", "agent_end"]);
		expect(requests).toEqual(["POST /v1/sessions/s%201/prompt -", "GET /v1/sessions/s%201/events 2"]);
	});

	it("throws the error envelope of a 4xx without retrying", async () => {
		let calls = 0;
		const url = await serve((_req, res) => {
			calls++;
			res.writeHead(404, { "content-type": "application/json" });
			res.end(JSON.stringify({ error: { code: "SESSION_NOT_FOUND", message: "no session x" } }));
		});
		const error = await collect(streamEvents({ url, retryDelayMs: 0 })).catch((e) => e);
		expect(error).toBeInstanceOf(WheelhouseHttpError);
		expect(error).toMatchObject({ status: 404, code: "SESSION_NOT_FOUND", message: "no session x" });
		expect(calls).toBe(1);
	});

	it("gives up after maxRetries consecutive 5xx answers", async () => {
		let calls = 0;
		const url = await serve((_req, res) => {
			calls++;
			res.writeHead(503, { "content-type": "application/json" });
			res.end(JSON.stringify({ error: { code: "SHUTTING_DOWN", message: "bye" } }));
		});
		const error = await collect(streamEvents({ url, retryDelayMs: 0, maxRetries: 2 })).catch((e) => e);
		expect(error).toMatchObject({ status: 503, code: "SHUTTING_DOWN" });
		expect(calls).toBe(3);
	});

	it("rejects a 2xx answer that is not an event stream", async () => {
		const url = await serve((_req, res) => {
			res.writeHead(202, { "content-type": "application/json" });
			res.end(JSON.stringify({ eventId: 1 }));
		});
		const error = await collect(streamEvents({ url })).catch((e) => e);
		expect(error).toBeInstanceOf(WheelhouseHttpError);
		expect(error.message).toMatch(/expected a text\/event-stream answer/);
	});

	it("ends quietly when the caller aborts, and closes the connection", async () => {
		const url = await serve((_req, res) => {
			startSse(res);
			res.write(frame(1));
		});
		const controller = new AbortController();
		const events: ReceivedEvent[] = [];
		for await (const event of streamEvents({ url, signal: controller.signal })) {
			events.push(event);
			controller.abort();
		}
		expect(events.map((e) => e.id)).toEqual([1]);
	});
});
