/**
 * The overflow relay of automatic compaction: once the first answer's first event after `start`
 * shows no context overflow, the relay hands the call's events through as they come, at the same
 * cost per event as reading the call's stream directly.
 */
import { describe, expect, it } from "vitest";
import { createAssistantMessage } from "../../../src/ai/assistant-message.js";
import { AssistantMessageEventStream } from "../../../src/ai/event-stream.js";
import type { AssistantMessageEvent } from "../../../src/ai/types.js";
import { relayWithOverflowRetry } from "../../../src/server/runtime/compaction/overflow-retry.js";
import { createEchoModel } from "../../../src/server/runtime/echo-model.js";

const model = createEchoModel();
const partial = createAssistantMessage(model);
const delta = (text: string): AssistantMessageEvent => ({ type: "text_delta", contentIndex: 0, delta: text, partial });

/** Reads `stream` in the background; `received` grows as events arrive. */
function reader(stream: AsyncIterable<AssistantMessageEvent>) {
	const received: AssistantMessageEvent[] = [];
	const done = (async () => {
		for await (const event of stream) received.push(event);
	})();
	return { received, done };
}

/** Microtask turns until `received` reaches `length` (at most 50). */
async function turnsUntil(received: unknown[], length: number): Promise<number> {
	for (let turns = 0; turns < 50; turns++) {
		if (received.length >= length) return turns;
		await Promise.resolve();
	}
	return Number.POSITIVE_INFINITY;
}

/** Pushes a `start`, a delta, then `n` more deltas one at a time; the microtask turns each took to arrive. */
async function turnsPerEvent(wrap: (source: AssistantMessageEventStream) => AssistantMessageEventStream, n: number) {
	const source = new AssistantMessageEventStream();
	const { received, done } = reader(wrap(source));
	source.push({ type: "start", partial });
	source.push(delta("first"));
	await turnsUntil(received, 2);
	const turns: number[] = [];
	for (let i = 0; i < n; i++) {
		source.push(delta(`w${i}`));
		turns.push(await turnsUntil(received, 3 + i));
	}
	const message = { ...partial, content: [{ type: "text" as const, text: "done" }] };
	source.push({ type: "done", reason: "stop", message });
	await done;
	return { turns, received };
}

describe("the overflow relay after its decision", () => {
	it("hands each event to the loop in as many microtask turns as the call's own stream does", async () => {
		const direct = await turnsPerEvent((s) => s, 20);
		const hooks = { model, allowed: () => true, retry: async () => undefined, onError: () => {} };
		let relayed: AssistantMessageEventStream | undefined;
		const viaRelay = await turnsPerEvent((s) => {
			relayed = relayWithOverflowRetry(s, hooks);
			return relayed;
		}, 20);
		expect(viaRelay.received).toEqual(direct.received);
		expect(viaRelay.turns).toEqual(direct.turns);
		expect((await relayed!.result()).content).toEqual([{ type: "text", text: "done" }]);
	});
});
