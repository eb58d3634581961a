/** Session and run ids are UUIDv7: the format clients see, unique, and sorted by creation time. */
import { describe, expect, it } from "vitest";
import { newRunId, newSessionId } from "../../../src/server/runtime/ids.js";

describe("ids", () => {
	it("run ids are canonical UUIDs of version 7 and the RFC 9562 variant, carrying their millisecond", () => {
		const at = Date.UTC(2026, 11, 3, 9, 0, 0, 123);
		const id = newRunId(at);
		expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect(Number.parseInt(id.replaceAll("-", "").slice(0, 12), 16)).toBe(at);
	});

	it("session ids are ses_ and 32 hex digits of a UUIDv7", () => {
		const id = newSessionId(1_700_000_000_000);
		expect(id).toMatch(/^ses_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
		expect(Number.parseInt(id.slice(4, 16), 16)).toBe(1_700_000_000_000);
	});

	it("sort by creation time and do not repeat within a millisecond", () => {
		const ids = [newSessionId(1_000), newSessionId(2_000), newSessionId(3_000)];
		expect([...ids].sort()).toEqual(ids);
		const same = new Set(Array.from({ length: 10_000 }, () => newRunId(5_000)));
		expect(same.size).toBe(10_000);
	});
});
