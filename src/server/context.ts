/**
 * What every route plugin gets: the runtime pieces of one server instance. `buildApp` decorates
 * the Fastify instance with it as `app.wheelhouse`, so plugins registered later (tool results,
 * approvals, OpenAPI) reach the same sessions.
 */
import type { Static } from "@sinclair/typebox";
import type { AgentMessage } from "../agent/types.js";
import type { ImageContent, UserMessage } from "../ai/types.js";
import type { ClusterNode } from "./cluster/node.js";
import type { ServerConfig } from "./config.js";
import type { ModelCatalog } from "./model-catalog.js";
import type { AgentProfiles } from "./profiles.js";
import type { MessageInput } from "./schemas.js";
import type { SessionManager } from "./session/manager.js";
import type { StreamSettings } from "./sse/open.js";

export interface ServerContext {
	config: ServerConfig;
	sessions: SessionManager;
	catalog: ModelCatalog;
	/** The agent profiles of the config (`profiles`), checked at startup. */
	profiles: AgentProfiles;
	stream: StreamSettings;
	/** Where each server tool comes from (`builtin`, `library`, `module`, `mcp`, `http`, ...), by name. */
	toolOrigins: Map<string, string>;
	/** This replica's part in a cluster (`WHEELHOUSE_REDIS_URL`); absent on a single node. */
	cluster?: ClusterNode;
	/** True once shutdown began (`/readyz` answers 503). */
	isShuttingDown(): boolean;
}

declare module "fastify" {
	interface FastifyInstance {
		wheelhouse: ServerContext;
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
