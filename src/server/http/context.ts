/**
 * What every route plugin gets: the runtime pieces of one server instance. `buildApp` decorates
 * the Fastify instance with it as `app.wheelhouse`, so plugins registered later (tool results,
 * approvals, OpenAPI) reach the same sessions.
 */
import type { Context as TraceContext } from "@opentelemetry/api";
import type { ClusterNode } from "../cluster/node.js";
import type { ServerConfig } from "../config/config.js";
import type { ServerTracing } from "../observability/tracing/server-tracing.js";
import type { ModelCatalog } from "../runtime/model-catalog.js";
import type { AgentProfiles } from "../runtime/profiles.js";
import type { Admission } from "../runtime/session/admission.js";
import type { SessionManager } from "../runtime/session/manager.js";
import type { IdempotencyKeys } from "./idempotency.js";
import type { StreamSlots } from "./limits.js";
import type { StreamSettings } from "./sse/open.js";

export interface ServerContext {
	config: ServerConfig;
	sessions: SessionManager;
	catalog: ModelCatalog;
	/** The agent profiles of the config (`profiles`), checked at startup. */
	profiles: AgentProfiles;
	stream: StreamSettings;
	/** The limits of SSE streams open at once, per key and per session: a stream route holds its slots first. */
	streamSlots: StreamSlots;
	/**
	 * The `Idempotency-Key`s of every keyed route (runs, queued messages, branching): one set, so a
	 * request in flight under a key is seen by every route of this server.
	 */
	idempotencyKeys: IdempotencyKeys;
	/** Where each server tool comes from (`builtin`, `library`, `module`, `mcp`, `http`, ...), by name. */
	toolOrigins: Map<string, string>;
	/** This replica's part in a cluster (`WHEELHOUSE_REDIS_URL`); absent on a single node. */
	cluster?: ClusterNode;
	/** Fair admission (`auth.admission: "queue"` with a run limit): prompts go through it. Absent: 429 past a limit. */
	admission?: Admission;
	/**
	 * The approval policy of a server tool for a session with approval rules `sessionRules` (the
	 * config's rules, then the session's); set once the tools are registered. Absent: no tool
	 * needs approval.
	 */
	toolApprovalPolicy?: (toolName: string, sessionRules: Record<string, "always" | "never">) => "always" | "never";
	/** True once shutdown began (`/readyz` answers 503). */
	isShuttingDown(): boolean;
	/** Spans of requests, runs, model and tool calls; undefined when tracing is off. */
	tracing?: ServerTracing;
}

declare module "fastify" {
	interface FastifyInstance {
		wheelhouse: ServerContext;
	}
	interface FastifyRequest {
		/**
		 * The trace context of the request's server span (its parent when it sent `traceparent`):
		 * what a run it starts is traced under. Undefined when tracing is off.
		 */
		traceContext?: TraceContext;
	}
}
