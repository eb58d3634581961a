/**
 * Failed span exports, made visible: the SDK hands an exporter's failure to its global error
 * handler, which logs nothing unless a diagnostic logger is installed, so a collector that is down
 * or refuses the spans would go unnoticed. Each exporter is wrapped; its failures reach
 * {@link ExportFailureReport}, which logs the first at once and then at most one line per interval,
 * with the number of failed exports since the last line.
 */
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";

/** The SDK's `ExportResultCode.SUCCESS` (its value is part of the exporter contract). */
const SUCCESS = 0;

/** Where export failures go: a logger's warn, with the failure count and the last error. */
export type ExportFailureSink = (failure: { failures: number; spans: number; error: string }, message: string) => void;

/**
 * Rate-limited reports of failed exports. Contract: `failed` never throws and never logs more than
 * one line per `intervalMs`; failures in between are counted into the next line.
 */
export class ExportFailureReport {
	private lastReportAt: number | undefined;
	private pendingFailures = 0;
	private pendingSpans = 0;

	constructor(
		private readonly sink: ExportFailureSink,
		private readonly where: string,
		private readonly intervalMs = 60_000,
		private readonly now: () => number = Date.now,
	) {}

	/** One export of `spans` spans failed with `error`. */
	failed(spans: number, error: unknown): void {
		this.pendingFailures += 1;
		this.pendingSpans += spans;
		const at = this.now();
		if (this.lastReportAt !== undefined && at - this.lastReportAt < this.intervalMs) return;
		const failures = this.pendingFailures;
		const lost = this.pendingSpans;
		this.lastReportAt = at;
		this.pendingFailures = 0;
		this.pendingSpans = 0;
		const reason = error instanceof Error ? error.message : String(error ?? "unknown error");
		const since =
			failures > 1 ? `${failures} exports (${lost} spans) failed since the last report` : `${lost} span(s) lost`;
		this.sink(
			{ failures, spans: lost, error: reason },
			`tracing: spans could not be exported to ${this.where} (${reason}); ${since}; next report in ${Math.round(this.intervalMs / 1000)} s at the earliest`,
		);
	}
}

/** `exporter`, with each failed export told to `report`. */
export function reportingExporter(exporter: SpanExporter, report: ExportFailureReport): SpanExporter {
	return {
		export(spans: ReadableSpan[], resultCallback) {
			exporter.export(spans, (result) => {
				if (result.code !== SUCCESS) report.failed(spans.length, result.error);
				resultCallback(result);
			});
		},
		shutdown: () => exporter.shutdown(),
		...(exporter.forceFlush ? { forceFlush: () => exporter.forceFlush!() } : {}),
	};
}
