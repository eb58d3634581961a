import { describe, expect, it } from "vitest";
import { parseStreamingJson } from "../../../src/ai/partial-json.js";
import { parseJsonPath, StreamedArgs } from "../../../src/ai/providers/google-gemini-args.js";

describe("StreamedArgs (Vertex partialArgs → JSON text)", () => {
	it("writes nested objects, arrays, numbers, booleans, nulls and multi-piece strings in order", () => {
		const args = new StreamedArgs();
		const pieces = [
			{ jsonPath: "$.query", stringValue: "wea", willContinue: true },
			{ jsonPath: "$.query", stringValue: 'ther "today"', willContinue: true },
			{ jsonPath: "$.query", stringValue: "" },
			{ jsonPath: "$.limit", numberValue: 5 },
			{ jsonPath: "$.filters.city", stringValue: "Paris" },
			{ jsonPath: "$.filters.exact", boolValue: true },
			{ jsonPath: "$.tags[0]", stringValue: "a" },
			{ jsonPath: "$.tags[1]", stringValue: "b" },
			{ jsonPath: "$.items[0].name", stringValue: "x" },
			{ jsonPath: "$.items[0].qty", numberValue: 2 },
			{ jsonPath: "$.items[1].name", stringValue: "y" },
			{ jsonPath: "$['odd key']", nullValue: "NULL_VALUE" },
		];
		let text = "";
		const snapshots: unknown[] = [];
		for (const piece of pieces) {
			text += args.add(piece);
			snapshots.push(parseStreamingJson(text));
		}
		text += args.finish();
		const expected = {
			query: 'weather "today"',
			limit: 5,
			filters: { city: "Paris", exact: true },
			tags: ["a", "b"],
			items: [{ name: "x", qty: 2 }, { name: "y" }],
			"odd key": null,
		};
		expect(JSON.parse(text)).toEqual(expected);
		expect(args.value).toEqual(expected);
		expect(args.consistent).toBe(true);
		expect(snapshots[0]).toEqual({ query: "wea" });
		expect(snapshots[1]).toEqual({ query: 'weather "today"' });
	});

	it("gives {} for a call without arguments", () => {
		const args = new StreamedArgs();
		expect(args.finish()).toBe("{}");
		expect(args.consistent).toBe(true);
	});

	it("reports an unparseable path as inconsistent so the caller uses the object", () => {
		const args = new StreamedArgs();
		args.add({ jsonPath: "location", stringValue: "x" });
		args.finish();
		expect(args.consistent).toBe(false);
	});

	it("parses JSON paths", () => {
		expect(parseJsonPath("$.a.b[2]['c d'][\"e\"]")).toEqual(["a", "b", 2, "c d", "e"]);
		expect(parseJsonPath("$")).toEqual([]);
		expect(parseJsonPath("a.b")).toBeUndefined();
		expect(parseJsonPath("$.a[")).toBeUndefined();
	});
});
