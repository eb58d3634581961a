/**
 * The on-disk frame format of the SQLite event log round-trips any type and data exactly and
 * rejects a malformed batch instead of returning garbage.
 */
import { describe, expect, it } from "vitest";
import { decodeBatch, encodeEvent, encodeSkip } from "../../src/store/event-batch.js";
import type { StoredEvent } from "../../src/store/types.js";

function decodeAll(firstId: number, text: string): StoredEvent[] {
	const out: StoredEvent[] = [];
	decodeBatch(firstId, text, (e) => {
		out.push(e);
		return true;
	});
	return out;
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
});
