import { describe, expect, it } from "vitest";
import { createGetCurrentTimeTool, describeTime } from "../../../src/tools/builtin/index.js";

const fixed = new Date("2026-07-01T12:34:56.789Z");

describe("get_current_time", () => {
	it("defaults to UTC", async () => {
		const result = await createGetCurrentTimeTool(() => fixed).execute("c", {});
		expect(result.details.iso).toBe("2026-07-01T12:34:56.789+00:00");
		expect(result.content).toEqual([{ type: "text", text: "2026-07-01T12:34:56.789+00:00 (Wednesday, UTC)" }]);
	});

	it("renders the wall time and offset of an IANA zone, including DST and half-hour offsets", async () => {
		const tool = createGetCurrentTimeTool(() => fixed);
		expect((await tool.execute("c", { timezone: "Europe/Berlin" })).details.iso).toBe("2026-07-01T14:34:56.789+02:00");
		expect((await tool.execute("c", { timezone: "Asia/Kolkata" })).details.iso).toBe("2026-07-01T18:04:56.789+05:30");
		const ny = (await tool.execute("c", { timezone: "America/New_York" })).details;
		expect(ny.utcOffset).toBe("-04:00");
		expect(ny.epochMs).toBe(fixed.getTime());
		expect(describeTime(new Date("2026-01-01T00:00:00Z"), "America/New_York").iso).toBe(
			"2025-12-31T19:00:00.000-05:00",
		);
	});

	it("throws naming an unknown zone", async () => {
		await expect(createGetCurrentTimeTool().execute("c", { timezone: "Mars/Olympus" })).rejects.toThrow(
			'Unknown time zone "Mars/Olympus"',
		);
	});

	it("reads the clock on every call", async () => {
		const result = await createGetCurrentTimeTool().execute("c", {});
		expect(Math.abs(result.details.epochMs - Date.now())).toBeLessThan(60_000);
	});
});
