/**
 * The faux/echo model's text streamer stops at an abort: at 0 ms between deltas (the next step
 * sees it) and with a long delay pending (the abort wakes it at once), ending with an `error`
 * event whose message is `aborted` and holds exactly the text streamed before it.
 */
import { describe, expect, it } from "vitest";
import type { AssistantMessageEvent, TextContent } from "../../../src/ai/types.js";
import { createEchoModel, streamEchoText } from "../../../src/server/runtime/echo-model.js";

const TEXT = Array.from({ length: 50 }, (_, i) => `w${i}`).join(" ");

/** Reads the stream, aborting once `abortAfter` deltas were read (0: at `text_start`); the events and the deltas' text. */
async function readAborting(delayMs: number, abortAfter: number) {
	const controller = new AbortController();
	const stream = streamEchoText(createEchoModel(), TEXT, { signal: controller.signal, delayMs });
	const events: AssistantMessageEvent[] = [];
	let streamed = "";
	let deltas = 0;
	for await (const event of stream) {
		events.push(event);
		if (event.type === "text_start" && abortAfter === 0) controller.abort();
		if (event.type !== "text_delta") continue;
		streamed += event.delta;
		if (++deltas === abortAfter) controller.abort();
	}
	return { events, streamed, result: await stream.result() };
}

describe("faux/echo text streamer: abort", () => {
	for (const [delayMs, abortAfter] of [
		[0, 1],
		[0, 3],
		[60_000, 0],
	]) {
		it(`ends with an aborted message holding the text streamed so far (${delayMs} ms between deltas, abort after ${abortAfter})`, async () => {
			const { events, streamed, result } = await readAborting(delayMs, abortAfter);
			const last = events[events.length - 1];
			expect(last?.type).toBe("error");
			expect(events.filter((e) => e.type === "error" || e.type === "done")).toHaveLength(1);
			expect(result.stopReason).toBe("aborted");
			expect((result.content[0] as TextContent).text).toBe(streamed);
			expect(streamed.length).toBeLessThan(TEXT.length);
		});
	}

	it("streams every word when nothing aborts", async () => {
		const stream = streamEchoText(createEchoModel(), TEXT, { signal: new AbortController().signal, delayMs: 0 });
		let streamed = "";
		for await (const event of stream) if (event.type === "text_delta") streamed += event.delta;
		expect(streamed).toBe(TEXT);
		expect((await stream.result()).stopReason).toBe("stop");
	});
});
