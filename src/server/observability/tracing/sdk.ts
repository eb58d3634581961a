/**
 * The OpenTelemetry SDK of one app, built from {@link ExportSettings}: a tracer provider with the
 * service's resource, a batch span processor per exporter (OTLP over HTTP, protobuf or JSON, and
 * the console), owned by the app and shut down — its queued spans flushed — when the app closes.
 *
 * Every SDK and exporter module is imported here, dynamically, and this file itself is imported
 * only when tracing is on: a server without `OTEL_*` settings loads none of them. The provider is
 * not registered as the process's global one; the app hands it to its own code (server-tracing.ts).
 * Spans are parented explicitly, so no context manager (and none of its per-promise cost) is needed.
 */
import type { TracerProvider } from "@opentelemetry/api";
import { redactSecrets } from "../../config/redact.js";
import { ExportFailureReport, type ExportFailureSink, reportingExporter } from "./export-failures.js";
import type { ExportSettings } from "./settings.js";

/** A tracer provider the app owns: `shutdown` exports what is queued and stops the exporters. */
export interface OwnedTracerProvider {
	provider: TracerProvider;
	shutdown(): Promise<void>;
}

/**
 * Builds the SDK for `settings` (the SDK modules are loaded now). A failed OTLP export is told to
 * `onExportFailure`, at most once a minute (export-failures.ts).
 */
export async function startTracerProvider(
	settings: ExportSettings,
	onExportFailure?: ExportFailureSink,
): Promise<OwnedTracerProvider> {
	const [
		{ BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter },
		{ defaultResource, resourceFromAttributes },
	] = await Promise.all([import("@opentelemetry/sdk-trace-base"), import("@opentelemetry/resources")]);
	const processors = [];
	for (const kind of settings.exporters) {
		if (kind === "console") {
			processors.push(new BatchSpanProcessor(new ConsoleSpanExporter()));
			continue;
		}
		const { OTLPTraceExporter } =
			settings.protocol === "http/json"
				? await import("@opentelemetry/exporter-trace-otlp-http")
				: await import("@opentelemetry/exporter-trace-otlp-proto");
		const exporter = new OTLPTraceExporter({ url: settings.endpoint, headers: settings.headers });
		processors.push(
			new BatchSpanProcessor(
				onExportFailure
					? reportingExporter(
							exporter,
							new ExportFailureReport(onExportFailure, redactSecrets(settings.endpoint) as string),
						)
					: exporter,
			),
		);
	}
	const provider = new BasicTracerProvider({
		// The SDK's own attributes (telemetry.sdk.*), then the configured ones.
		resource: defaultResource().merge(
			resourceFromAttributes({ ...settings.resourceAttributes, "service.name": settings.serviceName }),
		),
		spanProcessors: processors,
	});
	return { provider, shutdown: () => provider.shutdown() };
}
