import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../../src/agent/types.js";
import { encodeWireData, toWireEvent } from "../../src/wire/events.js";
import { emitScriptedMessage } from "./scripted-stream.js";

const awkward = [
	"plain ",
	'quote " and backslash \\ ',
	"line\nbreaks\r\nand\ttabs",
	"\u0000\u001f control",
	"ünïcödé 🎉",
	"lone \ud800 surrogate \udfff",
	"\u2028\u2029 separators",
	"",
];

describe("encodeWireData", () => {
	it("writes deltas byte for byte as JSON.stringify(toWireEvent(event)) would", () => {
		const events: AgentEvent[] = [];
		emitScriptedMessage(
			[
				{ type: "thinking", deltas: awkward },
				{ type: "text", deltas: awkward },
				{ type: "toolCall", id: "call_1", name: "t", jsonDeltas: ['{"a":', '"\\n"', "}"] },
			],
			(event) => events.push(event),
		);
		let deltas = 0;
		for (const event of events) {
			if (event.type === "message_update" && event.assistantMessageEvent.type.endsWith("_delta")) deltas++;
			expect(encodeWireData(event)).toBe(JSON.stringify(toWireEvent(event)));
		}
		expect(deltas).toBe(2 * awkward.length + 3);
	});
});
