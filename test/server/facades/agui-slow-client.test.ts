/**
 * An AG-UI client that stops reading is dropped like any SSE subscriber that falls behind, and
 * told so in AG-UI's terms: its stream ends with `RUN_ERROR` (`stream_dropped`), and the run it
 * drove is aborted (nobody would see the rest of it).
 */
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-test-key";
let server: TestServer;
const controllers: AbortController[] = [];
afterEach(async () => {
	for (const c of controllers.splice(0)) c.abort();
	await server?.close();
});

describe("an AG-UI client that stops reading", () => {
	it("gets RUN_ERROR stream_dropped as its last event, and its run is aborted", async () => {
		server = await startServer({ config: { apiKeys: [KEY], sseBufferBytes: 64 * 1024 } });
		// Enough text to fill the socket buffers of loopback (several MB) past the 64 KiB budget.
		const words = Array.from({ length: 200_000 }, (_, i) => `w${i}`).join(" ");
		const controller = new AbortController();
		controllers.push(controller);
		const res = await fetch(`${server.url}/agui/v1/run`, {
			method: "POST",
			headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
			body: JSON.stringify({ threadId: "slow", runId: "r1", messages: [{ id: "u1", role: "user", content: words }] }),
			signal: controller.signal,
		});
		const sessionId = res.headers.get("x-wheelhouse-session-id") as string;
		const reader = (res.body as ReadableStream<Uint8Array>).getReader();
		const decoder = new TextDecoder();
		let text = decoder.decode((await reader.read()).value, { stream: true });
		expect(text).toContain("RUN_STARTED");

		// Not reading while the run goes on: the server drops the client and aborts its run.
		await server.app.wheelhouse.sessions.get(sessionId, null).waitForIdle();
		for (;;) {
			const { done, value } = await reader.read();
			if (done) break;
			text += decoder.decode(value, { stream: true });
		}
		const data = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1] as string));
		expect(data.at(-1)).toMatchObject({ type: "RUN_ERROR", code: "stream_dropped" });
		expect(data.filter((event) => event.type === "RUN_FINISHED")).toEqual([]);
		const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		expect(transcript.body.messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "aborted" });
	}, 60_000);
});
