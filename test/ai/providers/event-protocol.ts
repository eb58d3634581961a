import { expect } from "vitest";
import type { AssistantMessageEventStream } from "../../../src/ai/event-stream.js";
import type { AssistantMessage, AssistantMessageEvent } from "../../../src/ai/types.js";
import type { ReplayResponse } from "../../helpers/replay-server.js";

/** Reads a stream to its end: every event, and the message `result()` resolved to. */
export async function collect(
	stream: AssistantMessageEventStream,
): Promise<{ events: AssistantMessageEvent[]; message: AssistantMessage }> {
	const events: AssistantMessageEvent[] = [];
	for await (const event of stream) events.push(event);
	return { events, message: await stream.result() };
}

/**
 * Asserts the assistant-message event protocol (src/ai/types.ts): `start` first; per content block
 * `<kind>_start`, deltas, `<kind>_end` with matching `contentIndex`; deltas concatenate to the final
 * text; exactly one terminal event, last, carrying the final message.
 */
export function expectProtocol(events: AssistantMessageEvent[], message: AssistantMessage): void {
	expect(events[0]?.type).toBe("start");
	const terminal = events.filter((e) => e.type === "done" || e.type === "error");
	expect(terminal).toHaveLength(1);
	expect(events[events.length - 1]).toBe(terminal[0]);
	const last = terminal[0]!;
	expect(last.type === "done" ? last.message : last.type === "error" ? last.error : undefined).toBe(message);

	const state = new Map<number, { kind: string; ended: boolean; deltas: string }>();
	let nextIndex = 0;
	for (const event of events.slice(1, -1)) {
		const [kind, phase] = event.type.split("_") as [string, string];
		if (!("contentIndex" in event)) throw new Error(`unexpected event ${event.type} mid-stream`);
		const index = event.contentIndex;
		if (phase === "start") {
			expect(index).toBe(nextIndex++);
			state.set(index, { kind, ended: false, deltas: "" });
			continue;
		}
		const block = state.get(index);
		expect(block, `${event.type} for an unstarted block ${index}`).toBeDefined();
		expect(block!.kind).toBe(kind);
		expect(block!.ended, `${event.type} after ${kind}_end at ${index}`).toBe(false);
		if (phase === "delta" && "delta" in event) block!.deltas += event.delta;
		if (phase === "end") block!.ended = true;
	}
	expect(message.content).toHaveLength(nextIndex);
	for (const [index, block] of state) {
		const content = message.content[index]!;
		if (last.type === "done") expect(block.ended, `block ${index} never ended`).toBe(true);
		if (content.type === "text") expect(block.deltas).toBe(content.text);
		if (content.type === "thinking") expect(block.deltas).toBe(content.thinking);
		if (content.type === "toolCall" && block.ended && block.deltas !== "") {
			expect(JSON.parse(block.deltas)).toEqual(content.arguments);
		}
	}
}

/** A compact, comparable trace of the events (types, indexes, deltas), for "same result at any split". */
export function trace(events: AssistantMessageEvent[]): string[] {
	return events.map((e) => {
		const index = "contentIndex" in e ? `#${e.contentIndex}` : "";
		const delta = "delta" in e ? ` ${JSON.stringify(e.delta)}` : "";
		return `${e.type}${index}${delta}`;
	});
}

/** Bytes sent one per write before the rest goes whole: each write costs ~0.1-1 ms on a loaded 2-core box. */
const BYTEWISE_LIMIT = 1536;

/**
 * The network chunkings every recorded stream is replayed with: whole; one byte per write (the
 * first {@link BYTEWISE_LIMIT} bytes: every frame kind of a file appears there); seeded random splits; and a
 * split inside every multi-byte UTF-8 character.
 */
export function splitModes(body: Buffer): { name: string; split: ReplayResponse["split"]; seed?: number }[] {
	const bytewise = Array.from({ length: Math.min(body.length, BYTEWISE_LIMIT) }, (_, i) => i + 1);
	const insideChars: number[] = [];
	for (let i = 0; i < body.length; i++) if ((body[i]! & 0xc0) === 0x80) insideChars.push(i);
	return [
		{ name: "whole", split: "whole" },
		{ name: "byte by byte", split: bytewise },
		{ name: "random (seed 1)", split: "random", seed: 1 },
		{ name: "random (seed 99)", split: "random", seed: 99 },
		{ name: "inside every multi-byte character", split: insideChars },
	];
}
