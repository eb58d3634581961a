/**
 * What every route plugin gets: the runtime pieces of one server instance. `buildApp` decorates
 * the Fastify instance with it as `app.wheelhouse`, so plugins registered later (tool results,
 * approvals, OpenAPI) reach the same sessions.
 */
import type { Context as TraceContext } from "@opentelemetry/api";
import type { Static } from "@sinclair/typebox";
import type { AgentMessage } from "../agent/types.js";
import type { ImageContent, UserMessage } from "../ai/types.js";
import type { ClusterNode } from "./cluster/node.js";
import type { ServerConfig } from "./config.js";
import type { StreamSlots } from "./limits.js";
import type { ModelCatalog } from "./model-catalog.js";
import type { AgentProfiles } from "./profiles.js";
import type { MessageInput } from "./schemas.js";
import type { SessionManager } from "./session/manager.js";
import type { StreamSettings } from "./sse/open.js";
import type { ServerTracing } from "./tracing/server-tracing.js";

export interface ServerContext {
	config: ServerConfig;
	sessions: SessionManager;
	catalog: ModelCatalog;
	/** The agent profiles of the config (`profiles`), checked at startup. */
	profiles: AgentProfiles;
	stream: StreamSettings;
	/** The limits of SSE streams open at once, per key and per session: a stream route holds its slots first. */
	streamSlots: StreamSlots;
	/** Where each server tool comes from (`builtin`, `library`, `module`, `mcp`, `http`, ...), by name. */
	toolOrigins: Map<string, string>;
	/** This replica's part in a cluster (`WHEELHOUSE_REDIS_URL`); absent on a single node. */
	cluster?: ClusterNode;
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

/** A prompt / queue body's `message` (+ `images`) as a UserMessage. */
export function toUserMessage(message: Static<typeof MessageInput>, images?: ImageContent[]): AgentMessage {
	if (typeof message === "string") {
		const content: UserMessage["content"] = [{ type: "text", text: message }, ...(images ?? [])];
		return { role: "user", content, timestamp: Date.now() };
	}
	let content = message.content as UserMessage["content"];
	if (images && images.length > 0) {
		content = typeof content === "string" ? [{ type: "text", text: content }, ...images] : [...content, ...images];
	}
	return { role: "user", content, timestamp: message.timestamp ?? Date.now() };
}
