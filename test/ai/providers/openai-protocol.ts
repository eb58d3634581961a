import { expect } from "vitest";
import type { AssistantMessageEventStream } from "../../../src/ai/event-stream.js";
import type { AssistantMessage, AssistantMessageEvent, Model } from "../../../src/ai/types.js";

/** Reads a stream to its end: every event, and the final message. */
export async function drain(
	stream: AssistantMessageEventStream,
): Promise<{ events: AssistantMessageEvent[]; message: AssistantMessage }> {
	const events: AssistantMessageEvent[] = [];
	for await (const event of stream) events.push(event);
	return { events, message: await stream.result() };
}

/**
 * Asserts the event protocol: `start` first, then per block `<kind>_start` (indexes in order),
 * deltas, `<kind>_end`; deltas add up to the final text/thinking; one terminal event, last.
 * Returns the block kinds in order (e.g. ["thinking", "text", "toolcall"]).
 */
export function checkProtocol(events: AssistantMessageEvent[], message: AssistantMessage): string[] {
	expect(events[0]?.type).toBe("start");
	const last = events.at(-1)!;
	expect(["done", "error"]).toContain(last.type);
	expect(events.filter((event) => event.type === "done" || event.type === "error")).toHaveLength(1);
	expect(last.type === "done" ? last.message : (last as any).error).toBe(message);
	const kinds: string[] = [];
	const deltas: string[] = [];
	const ended: boolean[] = [];
	for (const event of events.slice(1, -1)) {
		const [kind, phase] = event.type.split("_") as [string, string];
		const index = (event as any).contentIndex as number;
		if (phase === "start") {
			expect(index).toBe(kinds.length);
			kinds.push(kind);
			deltas.push("");
			ended.push(false);
			continue;
		}
		expect(kinds[index]).toBe(kind);
		expect(ended[index]).toBe(false);
		if (phase === "delta") deltas[index] += (event as any).delta;
		if (phase === "end") ended[index] = true;
	}
	expect(message.content).toHaveLength(kinds.length);
	message.content.forEach((block, index) => {
		if (last.type === "done") expect(ended[index]).toBe(true);
		if (block.type === "text") expect(deltas[index]).toBe(block.text);
		if (block.type === "thinking") expect(deltas[index]).toBe(block.thinking);
		if (block.type === "toolCall" && deltas[index] !== "") expect(JSON.parse(deltas[index]!)).toEqual(block.arguments);
	});
	return kinds;
}

/** Event types with indexes and deltas: equal traces mean equal streams. */
export function trace(events: AssistantMessageEvent[]): string[] {
	return events.map((event) => `${event.type}:${(event as any).contentIndex ?? ""}:${(event as any).delta ?? ""}`);
}

export function testModel<TApi extends string>(
	api: TApi,
	baseUrl: string,
	extra: Partial<Model<any>> = {},
): Model<any> {
	return {
		id: "gpt-test",
		name: "Test model",
		api,
		provider: "openai",
		baseUrl,
		reasoning: false,
		input: ["text", "image"],
		cost: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 },
		contextWindow: 400_000,
		maxTokens: 128_000,
		...extra,
	};
}
