/**
 * A `POST /api/stream` call ends with its response: pi's Agent aborting (which closes the
 * response) aborts the model call upstream; a shutdown aborts calls past the grace period and
 * still ends each stream with `error`; a reader that stops reading is dropped with a final `error`
 * (not the session streams' `stream_dropped`, which pi's client would not understand) and its model
 * call aborted.
 */
import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { registerFauxProvider, type ScriptedTurn } from "../../../src/ai/providers/faux.js";
import type { AssistantMessage, SimpleStreamOptions } from "../../../src/ai/types.js";
import { proxyAgent, userMessage } from "../../helpers/pi-proxy.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "pi-proxy-key-4";
const faux = registerFauxProvider({ api: "pi-proxy-abort-faux", provider: "scripted" });
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

/** Scripts one turn and resolves `aborted` when the model call's signal fires. */
function scriptObservedTurn(turn: ScriptedTurn): { aborted: Promise<void> } {
	let resolve!: () => void;
	const aborted = new Promise<void>((r) => {
		resolve = r;
	});
	faux.setResponses([
		(_context, options?: SimpleStreamOptions) => {
			options?.signal?.addEventListener("abort", () => resolve(), { once: true });
			return turn;
		},
	]);
	return { aborted };
}

const longText = (words: number) => Array.from({ length: words }, (_, i) => `word${i}`).join(" ");

/** Reads `/api/stream` as it arrives; `until(text)` resolves once the text so far matches. */
function openStream(url: string) {
	const controller = new AbortController();
	let text = "";
	const waiters: { test: (text: string) => boolean; resolve: () => void }[] = [];
	const done = (async () => {
		const res = await fetch(`${url}/api/stream`, {
			method: "POST",
			headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
			body: JSON.stringify({ model: faux.getModel(), context: { messages: [userMessage("go")] } }),
			signal: controller.signal,
		});
		const decoder = new TextDecoder();
		for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
			text += decoder.decode(chunk, { stream: true });
			for (const waiter of waiters.filter((w) => w.test(text))) {
				waiters.splice(waiters.indexOf(waiter), 1);
				waiter.resolve();
			}
		}
		return text;
	})();
	return {
		done,
		until: (test: (text: string) => boolean) =>
			test(text) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ test, resolve })),
	};
}

function events(text: string): { type: string; [key: string]: unknown }[] {
	return text
		.split("\n")
		.filter((line) => line.startsWith("data: "))
		.map((line) => JSON.parse(line.slice(6)));
}

describe("POST /api/stream: the model call lives as long as its response", () => {
	it("pi's Agent aborting closes the response, and the model call upstream is aborted", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, models: [faux.getModel()] });
		const { aborted } = scriptObservedTurn({ content: longText(500), delayMs: 10 });
		const agent = proxyAgent(server.url, KEY, { model: faux.getModel() });
		const firstDelta = new Promise<void>((resolve) => {
			agent.subscribe((event) => {
				if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") resolve();
			});
		});
		const run = agent.prompt("go");
		await firstDelta;
		agent.abort();
		await run;
		await aborted;
		const answer = agent.state.messages.at(-1) as AssistantMessage;
		expect(answer.stopReason).toBe("aborted");
		expect((answer.content[0] as { text: string }).text.length).toBeLessThan(longText(500).length);
	});

	it("a shutdown aborts a call past the grace period, and its stream still ends with `error`", async () => {
		server = await startServer({ config: { apiKeys: [KEY], shutdownGraceMs: 0 }, models: [faux.getModel()] });
		const { aborted } = scriptObservedTurn({ content: longText(500), delayMs: 10 });
		const stream = openStream(server.url);
		await stream.until((text) => text.includes('"text_delta"'));
		const closing = server.close();
		const text = await stream.done;
		await aborted;
		await closing;
		const last = events(text).at(-1);
		expect(last).toMatchObject({ type: "error", reason: "aborted" });
		expect(String(last?.errorMessage)).toContain("server shut down");
	});

	it("a reader that stops reading is dropped with a final `error`, and its model call is aborted", async () => {
		server = await startServer({
			config: { apiKeys: [KEY], sseBufferBytes: 1024 },
			models: [faux.getModel()],
		});
		// Far more than the socket buffers of loopback hold, in 64 KiB deltas.
		const { aborted } = scriptObservedTurn({ content: "x".repeat(48 * 1024 * 1024), chunk: 64 * 1024 });
		const { port } = new URL(server.url);
		const body = JSON.stringify({ model: faux.getModel(), context: { messages: [userMessage("go")] } });
		const text = await new Promise<string>((resolve, reject) => {
			const req = httpRequest(
				{
					host: "127.0.0.1",
					port,
					method: "POST",
					path: "/api/stream",
					headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
				},
				(res) => {
					res.pause(); // stop reading until the server gave up on us
					const chunks: Buffer[] = [];
					res.on("data", (chunk: Buffer) => chunks.push(chunk));
					res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
					res.on("error", reject);
					aborted.then(() => res.resume());
				},
			);
			req.on("error", reject);
			req.end(body);
		});
		const all = events(text);
		expect(all[0]).toEqual({ type: "start" });
		expect(all.at(-1)).toMatchObject({
			type: "error",
			reason: "error",
			errorMessage: expect.stringContaining("did not read the stream fast enough"),
		});
		expect(text).not.toContain("stream_dropped");
	});
});
