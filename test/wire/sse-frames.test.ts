import { describe, expect, it } from "vitest";
import { SSE_EVENT_NAMES } from "../../src/wire/events.js";
import { formatComment, formatEventFrame, formatFrame, formatRetry } from "../../src/wire/sse-frames.js";

describe("SSE frames", () => {
	it("writes id, event and data, ending with a blank line", () => {
		expect(formatFrame({ id: 7, event: "message_update", data: '{"a":1}' })).toBe(
			'id: 7\nevent: message_update\ndata: {"a":1}\n\n',
		);
	});

	it("splits data on every kind of line break", () => {
		expect(formatFrame({ data: "a\nb\r\nc\rd" })).toBe("data: a\ndata: b\ndata: c\ndata: d\n\n");
	});

	it("rejects CR or LF in id and event", () => {
		expect(() => formatFrame({ id: "1\n2", data: "x" })).toThrow(/id must not contain CR or LF/);
		expect(() => formatFrame({ event: "a\rb", data: "x" })).toThrow(/event must not contain CR or LF/);
	});

	it("writes comments line by line, with no blank line (which a lenient client dispatches as an empty message)", () => {
		expect(formatComment("heartbeat")).toBe(": heartbeat\n");
		expect(formatComment("a\nb")).toBe(": a\n: b\n");
	});

	it("writes retry: as a line with no blank line, to join the next event's frame", () => {
		expect(formatRetry(2000)).toBe("retry: 2000\n");
		expect(formatRetry(1.7)).toBe("retry: 1\n");
	});

	it("writes an event's frame on the hot path with the same bytes as formatFrame, for every name", () => {
		const data = '{"type":"x","text":"a\\nb"}';
		for (const event of [...SSE_EVENT_NAMES, "custom_event", ""]) {
			for (const id of [1, 42, 1_000_000]) {
				expect(formatEventFrame(id, event, data)).toBe(formatFrame({ id, event, data }));
			}
		}
		// Data that is not one line, or an id that is not a safe integer, still gets formatFrame's rules.
		expect(formatEventFrame(3, "message_update", "a\nb")).toBe("id: 3\nevent: message_update\ndata: a\ndata: b\n\n");
		expect(formatEventFrame(0.5, "message_update", "x")).toBe("id: 0.5\nevent: message_update\ndata: x\n\n");
		expect(() => formatEventFrame(1, "a\nb", "x")).toThrow(/event must not contain CR or LF/);
	});
});
