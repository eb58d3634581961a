import { describe, expect, it } from "vitest";
import { formatComment, formatFrame, formatRetry } from "../../src/wire/sse-frames.js";

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
});
