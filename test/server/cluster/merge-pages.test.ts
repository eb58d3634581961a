/**
 * The read a cluster stream does after its cursor: the union of a store log page and a tail page,
 * as far as both are known complete (`mergePages`).
 */
import { describe, expect, it } from "vitest";
import { mergePages } from "../../../src/server/cluster/remote-stream.js";
import type { StoredEvent } from "../../../src/store/types.js";

const ev = (id: number, type = "message_update", data = "{}"): StoredEvent => ({ id, type, data, createdAt: 0 });
const ids = (events: StoredEvent[]) => events.map((e) => e.id);

describe("mergePages", () => {
	it("fills the log's holes (deltas it does not keep) from the tail, each id once", () => {
		const logged = [ev(3, "message_start"), ev(7, "message_end")];
		const tail = { events: [4, 5, 6, 7].map((id) => ev(id)), covered: 7 };
		expect(ids(mergePages(2, logged, tail, "marked", 1e9).events)).toEqual([3, 4, 5, 6, 7]);
	});

	it("takes the log only up to the mark in `marked` scope, and says it held events back", () => {
		// 8 and 9 are deltas not published yet; 10 is in the log already: sending it would skip them.
		const logged = [ev(3, "message_start"), ev(10, "message_end")];
		const tail = { events: [ev(4), ev(5)], covered: 5 };
		const marked = mergePages(2, logged, tail, "marked", 1e9);
		expect(ids(marked.events)).toEqual([3, 4, 5]);
		expect(marked.heldBack).toBe(true);
		const all = mergePages(2, logged, tail, "all", 1e9);
		expect(ids(all.events)).toEqual([3, 4, 5, 10]);
		expect(all.heldBack).toBe(false);
	});

	it("stops at the log page's last event (the log may go on with events the tail trimmed)", () => {
		const logged = [ev(3, "a"), ev(4, "b")];
		const tail = { events: [ev(9), ev(10)], covered: 10 };
		expect(ids(mergePages(2, logged, tail, "marked", 1e9).events)).toEqual([3, 4]);
		// The next page: the log has nothing more, the tail goes on.
		expect(ids(mergePages(4, [], tail, "marked", 1e9).events)).toEqual([9, 10]);
	});

	it("is the log alone without a tail (Redis away), and nothing at or below the cursor", () => {
		expect(ids(mergePages(2, [ev(3), ev(8)], undefined, "marked", 1e9).events)).toEqual([3, 8]);
		const tail = { events: [ev(2), ev(3)], covered: Number.POSITIVE_INFINITY };
		expect(ids(mergePages(2, [], tail, "marked", 1e9).events)).toEqual([3]);
	});

	it("keeps to the byte budget, one event at least", () => {
		const big = "x".repeat(100);
		const tail = { events: [ev(3, "t", big), ev(4, "t", big), ev(5, "t", big)], covered: 5 };
		expect(ids(mergePages(2, [], tail, "marked", 250).events)).toEqual([3, 4]);
		expect(ids(mergePages(2, [], tail, "marked", 10).events)).toEqual([3]);
	});
});
