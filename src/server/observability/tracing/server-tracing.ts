/**
 * The tracing of one app: its tracer (from the app's own tracer provider, never the process's
 * global one, so two apps in one process share nothing), the request spans, the run spans and
 * the model-call spans of the pi proxy. `buildApp` imports this file only when tracing is on.
 *
 * Which span shows what (docs/operations.md, "Traces"):
 *
 * ```
 * POST /v1/sessions/:id/prompt        SERVER  the request (its route, status)
 * └─ invoke_agent                     run: session id, run id, tokens, how it ended
 *    ├─ chat {model}                  CLIENT  one model call: provider, model, response id, tokens, finish reason
 *    └─ execute_tool {name}           one tool call: name, call id, error
 * ```
 */
import { type Context, ROOT_CONTEXT, type Tracer, type TracerProvider } from "@opentelemetry/api";
import type { FastifyInstance } from "fastify";
import { ChatSpan, type ModelCallRequest } from "./chat-span.js";
import type { ExportFailureSink } from "./export-failures.js";
import { installHttpSpans } from "./http-spans.js";
import { RunSpans } from "./run-spans.js";
import type { TracingSettings } from "./settings.js";

/** The instrumentation scope the spans are reported under. */
const SCOPE = "wheelhouse";

export class ServerTracing {
	readonly runs: RunSpans;
	private readonly tracer: Tracer;

	private constructor(
		provider: TracerProvider,
		readonly captureContent: boolean,
		private readonly shutdownProvider: (() => Promise<void>) | undefined,
	) {
		this.tracer = provider.getTracer(SCOPE);
		this.runs = new RunSpans({ tracer: this.tracer, captureContent });
	}

	/**
	 * The tracing of an app: on `provider` when given (the caller owns it: tests, library users),
	 * else on an SDK built from `settings` (loaded now, shut down with {@link shutdown}), whose failed
	 * exports go to `onExportFailure` (rate-limited); undefined when neither turns tracing on.
	 */
	static async start(
		settings: TracingSettings,
		provider?: TracerProvider,
		onExportFailure?: ExportFailureSink,
	): Promise<ServerTracing | undefined> {
		if (provider) return new ServerTracing(provider, settings.captureContent, undefined);
		if (!settings.export) return undefined;
		const { startTracerProvider } = await import("./sdk.js");
		const owned = await startTracerProvider(settings.export, onExportFailure);
		return new ServerTracing(owned.provider, settings.captureContent, owned.shutdown);
	}

	/** The request spans (before the routes are registered). */
	installRequestSpans(app: FastifyInstance): void {
		installHttpSpans(app, this.tracer);
	}

	/** Starts the span of a model call made outside a session (`POST /api/stream`) under `parent`. */
	startModelCall(parent: Context | undefined, request: ModelCallRequest): ChatSpan {
		return ChatSpan.start(this.tracer, parent ?? ROOT_CONTEXT, request, this.captureContent);
	}

	/**
	 * Exports the spans still queued and stops the exporters of an SDK this app built. Resolves to
	 * why that failed (a collector that is down), if it did: the close goes on.
	 */
	async shutdown(): Promise<Error | undefined> {
		try {
			await this.shutdownProvider?.();
			return undefined;
		} catch (err) {
			return err instanceof Error ? err : new Error(String(err));
		}
	}
}
