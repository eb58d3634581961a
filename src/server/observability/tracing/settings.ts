/**
 * Tracing settings from the standard OpenTelemetry environment variables, so that a deployment
 * configures Wheelhouse like any other OpenTelemetry-instrumented service. Reading them loads
 * nothing: the SDK is imported only when these settings say tracing is on (sdk.ts).
 *
 * - `OTEL_SDK_DISABLED=true`: off, whatever else is set.
 * - `OTEL_TRACES_EXPORTER`: `otlp`, `console`, a comma-separated list of both, or `none` (off).
 *   Unset: `otlp` when an OTLP endpoint is set, else off (a server without a collector pays
 *   nothing and does not try to reach `localhost:4318`).
 * - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), else `OTEL_EXPORTER_OTLP_ENDPOINT` +
 *   `/v1/traces`, else `http://localhost:4318/v1/traces`.
 * - `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf`
 *   (default) or `http/json`; `grpc` is not supported.
 * - `OTEL_EXPORTER_OTLP_TRACES_HEADERS` / `OTEL_EXPORTER_OTLP_HEADERS`: `key=value,...`
 *   (values percent-decoded), e.g. a collector's API key.
 * - `OTEL_SERVICE_NAME`, else `service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else `wheelhouse`;
 *   `OTEL_RESOURCE_ATTRIBUTES` (`key=value,...`) adds resource attributes.
 * - `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (the GenAI conventions' variable):
 *   record prompts, answers, tool arguments and results on the spans. Off by default: message
 *   content is user data.
 *
 * Sampling (`OTEL_TRACES_SAMPLER`), batching (`OTEL_BSP_*`) and the export timeout
 * (`OTEL_EXPORTER_OTLP_TIMEOUT`) are read by the SDK itself from the process environment.
 */
import { ConfigError } from "../../config/config.js";

export type TraceExporterKind = "otlp" | "console";
export type OtlpProtocol = "http/protobuf" | "http/json";

/** Where and how spans are exported. */
export interface ExportSettings {
	exporters: TraceExporterKind[];
	/** The OTLP traces URL (used when `exporters` has `otlp`). */
	endpoint: string;
	protocol: OtlpProtocol;
	headers: Record<string, string>;
	serviceName: string;
	resourceAttributes: Record<string, string>;
}

export interface TracingSettings {
	/** Undefined: tracing is off (no SDK loaded), unless the app is given a tracer provider. */
	export: ExportSettings | undefined;
	/** Record message content on the spans (prompts, answers, tool arguments and results). */
	captureContent: boolean;
}

type Env = Record<string, string | undefined>;

const DEFAULT_ENDPOINT = "http://localhost:4318";
const DEFAULT_SERVICE_NAME = "wheelhouse";

/** A set, non-blank variable's trimmed value. */
function read(env: Env, name: string): string | undefined {
	const value = env[name]?.trim();
	return value ? value : undefined;
}

/** `key=value,...` with percent-encoded values (the OTel spec's format for headers and resource attributes). */
function parsePairs(env: Env, name: string): Record<string, string> {
	const raw = read(env, name);
	const pairs: Record<string, string> = {};
	if (!raw) return pairs;
	for (const item of raw.split(",")) {
		if (!item.trim()) continue;
		const eq = item.indexOf("=");
		const key = eq > 0 ? item.slice(0, eq).trim() : "";
		if (!key) throw new ConfigError(name, `"${item.trim()}" is not key=value (expected key=value,key2=value2)`);
		try {
			pairs[key] = decodeURIComponent(item.slice(eq + 1).trim());
		} catch {
			throw new ConfigError(name, `the value of ${key} is not valid percent-encoding`);
		}
	}
	return pairs;
}

function exportersOf(env: Env): TraceExporterKind[] {
	const raw = read(env, "OTEL_TRACES_EXPORTER");
	if (raw === undefined) {
		const endpointSet =
			read(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") !== undefined ||
			read(env, "OTEL_EXPORTER_OTLP_ENDPOINT") !== undefined;
		return endpointSet ? ["otlp"] : [];
	}
	const names = raw
		.split(",")
		.map((name) => name.trim().toLowerCase())
		.filter(Boolean);
	if (names.includes("none")) {
		if (names.length > 1) throw new ConfigError("OTEL_TRACES_EXPORTER", "`none` cannot be combined with exporters");
		return [];
	}
	for (const name of names) {
		if (name !== "otlp" && name !== "console") {
			throw new ConfigError(
				"OTEL_TRACES_EXPORTER",
				`unsupported exporter "${name}": use otlp, console, both (otlp,console) or none`,
			);
		}
	}
	return [...new Set(names)] as TraceExporterKind[];
}

function protocolOf(env: Env): OtlpProtocol {
	const name = read(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
		: "OTEL_EXPORTER_OTLP_PROTOCOL";
	const raw = read(env, name) ?? "http/protobuf";
	if (raw === "http/protobuf" || raw === "http/json") return raw;
	throw new ConfigError(name, `unsupported protocol "${raw}": use http/protobuf (the default) or http/json`);
}

function endpointOf(env: Env): string {
	const traces = read(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	const name = traces ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
	// The signal-specific endpoint is the full URL; the generic one is a base the path is added to.
	const url = traces ?? `${(read(env, name) ?? DEFAULT_ENDPOINT).replace(/\/+$/, "")}/v1/traces`;
	let parsed: URL;
	try {
		parsed = new URL(url);
	} catch {
		throw new ConfigError(name, `"${url}" is not a URL (expected e.g. http://collector:4318)`);
	}
	if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
		throw new ConfigError(name, `"${url}" must be an http:// or https:// URL (OTLP over HTTP)`);
	}
	return url;
}

function captureContentOf(env: Env): boolean {
	const name = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
	const raw = read(env, name)?.toLowerCase();
	if (raw === undefined || raw === "false" || raw === "no_content") return false;
	if (raw === "true" || raw === "span_only") return true;
	throw new ConfigError(name, `"${env[name]}" is not one of true, false (the default)`);
}

/** The tracing settings of `env`; throws a {@link ConfigError} naming the variable on a bad value. */
export function tracingSettingsFrom(env: Env): TracingSettings {
	const captureContent = captureContentOf(env);
	if (read(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return { export: undefined, captureContent };
	const exporters = exportersOf(env);
	if (exporters.length === 0) return { export: undefined, captureContent };
	const resourceAttributes = parsePairs(env, "OTEL_RESOURCE_ATTRIBUTES");
	return {
		export: {
			exporters,
			endpoint: endpointOf(env),
			protocol: protocolOf(env),
			headers: {
				...parsePairs(env, "OTEL_EXPORTER_OTLP_HEADERS"),
				...parsePairs(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
			},
			serviceName: read(env, "OTEL_SERVICE_NAME") ?? resourceAttributes["service.name"] ?? DEFAULT_SERVICE_NAME,
			resourceAttributes,
		},
		captureContent,
	};
}
