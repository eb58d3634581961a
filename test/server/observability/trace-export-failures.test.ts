/**
 * Failed span exports are reported at most once per interval, each report counting the failures
 * since the last: a collector that is down for an hour is a line a minute, not one per batch.
 * (The process-level test in startup-output.test.ts shows the first report of a real failed export.)
 */
import { describe, expect, it } from "vitest";
import { ExportFailureReport } from "../../../src/server/observability/tracing/export-failures.js";

describe("ExportFailureReport", () => {
	it("logs the first failure at once, then at most one line per interval with the count since", () => {
		let now = 1_000_000;
		const lines: { fields: { failures: number; spans: number; error: string }; message: string }[] = [];
		const report = new ExportFailureReport(
			(fields, message) => lines.push({ fields, message }),
			"http://collector:4318/v1/traces",
			60_000,
			() => now,
		);
		report.failed(3, new Error("connect ECONNREFUSED 10.0.0.9:4318"));
		expect(lines).toHaveLength(1);
		expect(lines[0]!.message).toBe(
			"tracing: spans could not be exported to http://collector:4318/v1/traces (connect ECONNREFUSED 10.0.0.9:4318); 3 span(s) lost; next report in 60 s at the earliest",
		);
		for (let i = 0; i < 10; i++) {
			now += 5_000;
			report.failed(2, new Error("timeout"));
		}
		expect(lines).toHaveLength(1);
		now += 10_000;
		report.failed(1, new Error("503 Service Unavailable"));
		expect(lines).toHaveLength(2);
		expect(lines[1]!.fields).toEqual({ failures: 11, spans: 21, error: "503 Service Unavailable" });
		expect(lines[1]!.message).toMatch(/11 exports \(21 spans\) failed since the last report/);
	});
});
