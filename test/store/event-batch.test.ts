/**
 * The on-disk frame format of the SQLite event log round-trips any type and data exactly and
 * rejects a malformed batch instead of returning garbage.
 */
import { describe, expect, it } from "vitest";
import { decodeBatch, encodeEvent, encodeEventWithRefs, encodeSkip } from "../../src/store/sql/event-batch.js";
import type { StoredEvent } from "../../src/store/types.js";

function decodeAll(firstId: number, text: string, messages: string[] = []): StoredEvent[] {
	const out: StoredEvent[] = [];
	decodeBatch(
		firstId,
		text,
		(e) => {
			out.push(e);
			return true;
		},
		(seq) => messages[seq],
	);
	return out;
}

/** A message's JSON long enough to be referred to. */
function message(role: string, text: string): string {
	return JSON.stringify({ role, content: [{ type: "text", text: text.repeat(20) }], timestamp: 1 });
}

describe("event batch frames", () => {
	it("round-trips awkward strings: separators, line breaks, astral characters, empty data", () => {
		const events = [
			{ type: "message_update", data: '{"delta":"a,b:c\\n"}', createdAt: 1_700_000_000_000 },
			{ type: "x:y,z", data: "line1\nline2\r\n:,", createdAt: 0 },
			{ type: "emoji", data: "😀 done 𝄞", createdAt: 42 },
			{ type: "t", data: "", createdAt: 7 },
		];
		const text = events.map((e) => encodeEvent(e.type, e.data, e.createdAt)).join("");
		expect(decodeAll(10, text)).toEqual(events.map((e, i) => ({ id: 10 + i, ...e })));
	});

	it("skips ids at skip frames (ids of events that were not written)", () => {
		const text = [
			encodeEvent("message_start", "s", 1),
			encodeSkip(3, 2),
			encodeEvent("message_end", "e", 3),
			encodeSkip(12, 4),
			encodeEvent("turn_end", "t", 5),
		].join("");
		expect(decodeAll(5, text).map((e) => [e.id, e.type])).toEqual([
			[5, "message_start"],
			[9, "message_end"],
			[22, "turn_end"],
		]);
		expect(() => decodeAll(1, `${encodeEvent("t", "x", 1)}1,0,1:0`)).toThrow(/bad skip frame/);
	});

	it("stops when the visitor says so", () => {
		const text = ["a", "b", "c"].map((d) => encodeEvent("t", d, 1)).join("");
		const seen: string[] = [];
		decodeBatch(1, text, (e) => {
			seen.push(e.data);
			return seen.length < 2;
		});
		expect(seen).toEqual(["a", "b"]);
	});

	it("rejects a truncated or foreign batch", () => {
		const frame = encodeEvent("t", "hello", 1);
		expect(() => decodeAll(1, frame.slice(0, -2))).toThrow(/malformed event batch at id 1/);
		expect(() => decodeAll(1, `${frame}garbage`)).toThrow(/malformed event batch at id 2/);
	});

	it("writes the messages an event repeats as references and reads the data back byte for byte", () => {
		const messages = [message("user", "question "), message("assistant", "answer ")];
		const targets = messages.map((json, seq) => ({ seq, json }));
		const events = [
			{ type: "message_end", data: `{"type":"message_end","message":${messages[1]}}` },
			{ type: "turn_end", data: `{"type":"turn_end","message":${messages[1]},"toolResults":[]}` },
			{ type: "agent_end", data: `{"type":"agent_end","messages":[${messages[0]},${messages[1]}]}` },
			// The same message twice, and raw control characters that look like the reference markers.
			{ type: "x", data: `\u0001${messages[0]}\u0002${messages[0]}\u00010\u0002` },
		];
		const frames = events.map((e, i) => encodeEventWithRefs(e.type, e.data, 100 + i, targets));
		for (const [i, frame] of frames.entries()) {
			expect(frame.length).toBeLessThan(events[i].data.length); // the messages were not repeated
			expect(frame).not.toContain(messages[0]);
			expect(frame).not.toContain(messages[1]);
		}
		expect(decodeAll(1, frames.join(""), messages)).toEqual(
			events.map((e, i) => ({ id: 1 + i, type: e.type, data: e.data, createdAt: 100 + i })),
		);
	});

	it("leaves data without a stored message, or with only short ones, as a plain frame", () => {
		const short = JSON.stringify({ role: "user", content: "hi", timestamp: 1 });
		const data = `{"type":"message_end","message":${short}}`;
		expect(encodeEventWithRefs("message_end", data, 5, [{ seq: 0, json: short }])).toBe(
			encodeEvent("message_end", data, 5),
		);
		const other = message("user", "elsewhere ");
		expect(encodeEventWithRefs("message_end", data, 5, [{ seq: 0, json: other }])).toBe(
			encodeEvent("message_end", data, 5),
		);
	});

	it("reads a reference to a message that is not there as null, and rejects a broken reference", () => {
		const json = message("assistant", "gone ");
		const frame = encodeEventWithRefs("message_end", `{"message":${json}}`, 1, [{ seq: 7, json }]);
		expect(decodeAll(1, frame, [])[0]?.data).toBe(`{"message":null}`);
		const broken = frame.replace("\u0002", "");
		expect(() => decodeAll(1, broken, [])).toThrow(/malformed event batch at id 1/);
	});
});
