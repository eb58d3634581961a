import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../../src/agent/types.js";
import { MessageAssembler } from "../../src/client/message-assembler.js";
import { encodeWireData, type WireEvent } from "../../src/wire/events.js";
import { chunks, emitScriptedMessage, type ScriptedBlock } from "./scripted-stream.js";

/** Streams `blocks`, recording each server event as JSON at emit time (what the server saw) and its wire data line. */
function record(blocks: ScriptedBlock[]) {
	const server: AgentEvent[] = [];
	const wire: string[] = [];
	const final = emitScriptedMessage(blocks, (event) => {
		server.push(JSON.parse(JSON.stringify(event)));
		wire.push(encodeWireData(event));
	});
	return { server, wire, final };
}

const mixed: ScriptedBlock[] = [
	{ type: "thinking", deltas: ["Let me ", "think ", "about ünïcödé 🎉"], signature: "sig-think" },
	{ type: "text", deltas: ["Hello", ", ", "world", "!\nSecond line"], signature: "sig-text" },
	{ type: "toolCall", id: "call_1", name: "calculate", jsonDeltas: chunks('{"expression":"1 + 2 * (3 - 4)"}', 3) },
	{
		type: "toolCall",
		id: "call_2",
		name: "get_current_time",
		jsonDeltas: chunks('{"timezone":"Europe/Berlin","nested":{"a":[1,2,{"b":null}]}}', 5),
		keepPartialJson: true,
	},
];

describe("MessageAssembler", () => {
	it("expands every compact wire event back into the event the server emitted", () => {
		const { server, wire } = record(mixed);
		const assembler = new MessageAssembler();
		for (let i = 0; i < wire.length; i++) {
			const expanded = assembler.apply(JSON.parse(wire[i]) as WireEvent);
			expect(JSON.parse(JSON.stringify(expanded)), `event ${i} (${server[i].type})`).toEqual(server[i]);
		}
		expect(assembler.incomplete).toBe(false);
		expect(assembler.isStreaming).toBe(false);
	});

	it("ends with the server's final message, and its partial before message_end has the final content", () => {
		const { wire, final } = record(mixed);
		const assembler = new MessageAssembler();
		for (const line of wire.slice(0, -1)) assembler.apply(JSON.parse(line));
		expect(assembler.isStreaming).toBe(true);
		expect((assembler.message as any).content).toEqual(JSON.parse(JSON.stringify(final.content)));
		assembler.apply(JSON.parse(wire[wire.length - 1]));
		expect(assembler.message).toEqual(JSON.parse(JSON.stringify(final)));
	});

	it("never sends the partial or full message in message_update, so bytes grow linearly", () => {
		const sizeFor = (words: number) => {
			let bytes = 0;
			const deltas = Array.from({ length: words }, (_, i) => `w${i} `);
			emitScriptedMessage([{ type: "text", deltas }], (event) => {
				bytes += encodeWireData(event).length;
			});
			return bytes;
		};
		const small = sizeFor(200);
		const large = sizeFor(2000);
		// text_end and message_end carry the text once more each: still linear (~10x), nowhere near 100x.
		expect(large / small).toBeLessThan(11);
		const { wire } = record(mixed);
		for (const line of wire) {
			const event = JSON.parse(line);
			if (event.type !== "message_update") continue;
			expect(event.message).toBeUndefined();
			expect(event.assistantMessageEvent.partial).toBeUndefined();
		}
	});

	it("continues a late join from a session_snapshot's streaming message", () => {
		const { server, wire } = record(mixed);
		// Join after the 6th event: the snapshot carries the server's partial at that point.
		const joinAt = 6;
		const lastUpdate = server[joinAt - 1] as Extract<AgentEvent, { type: "message_update" }>;
		const assembler = new MessageAssembler();
		assembler.apply({ type: "session_snapshot", streamingMessage: lastUpdate.message });
		for (let i = joinAt; i < wire.length; i++) {
			expect(JSON.parse(JSON.stringify(assembler.apply(JSON.parse(wire[i]))))).toEqual(server[i]);
		}
		expect(assembler.incomplete).toBe(false);
	});

	it("renders from a placeholder when it joins mid-message without a snapshot, and says so", () => {
		const { wire, final } = record([{ type: "text", deltas: ["a", "b", "c", "d"] }]);
		const assembler = new MessageAssembler();
		// Skip message_start, text_start and the first delta.
		for (const line of wire.slice(3, -1)) assembler.apply(JSON.parse(line));
		expect(assembler.incomplete).toBe(true);
		expect((assembler.message as any).content).toEqual([{ type: "text", text: "abcd" }]);
		assembler.apply(JSON.parse(wire[wire.length - 1]));
		expect(assembler.message).toEqual(JSON.parse(JSON.stringify(final)));
	});

	it("forgets its state on a snapshot with reset: true", () => {
		const { wire } = record([{ type: "text", deltas: ["x"] }]);
		const assembler = new MessageAssembler();
		for (const line of wire.slice(0, 3)) assembler.apply(JSON.parse(line));
		expect(assembler.isStreaming).toBe(true);
		assembler.apply({ type: "session_snapshot", reset: true });
		expect(assembler.isStreaming).toBe(false);
		expect(assembler.message).toBeUndefined();
	});

	it("passes non-message events through unchanged", () => {
		const assembler = new MessageAssembler();
		const events: WireEvent[] = [
			{ type: "agent_start" },
			{ type: "tool_execution_start", toolCallId: "c", toolName: "t", args: { a: 1 } },
			{ type: "queue_update", steering: 1 },
		];
		for (const event of events) expect(assembler.apply(event)).toBe(event);
	});

	it("does not share objects with an in-process caller's message_start", () => {
		const assembler = new MessageAssembler();
		const serverEvents: AgentEvent[] = [];
		emitScriptedMessage([{ type: "text", deltas: ["abc"] }], (event) => serverEvents.push(event));
		const start = serverEvents[0] as Extract<AgentEvent, { type: "message_start" }>;
		const contentBefore = JSON.stringify(start.message);
		assembler.apply({ type: "message_start", message: { ...start.message, content: [] } as any });
		assembler.apply({
			type: "message_update",
			assistantMessageEvent: { type: "text_start", contentIndex: 0, block: { type: "text", text: "" } },
		});
		assembler.apply({
			type: "message_update",
			assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "z" },
		});
		expect(JSON.stringify(start.message)).toBe(contentBefore);
	});
});
