/**
 * The empty assistant message: the one starting shape of every provider's `partial`, of a failed
 * turn and of a client's placeholder, so their fields cannot drift apart. A leaf module, so that
 * providers, the agent and the client can all use it without importing stream.ts (which imports the
 * providers to register them).
 */
import type { AssistantMessage, Model } from "./types.js";
import { zeroUsage } from "./usage.js";

/** Which model a message says it came from. */
export type MessageOrigin = Pick<Model<any>, "api" | "provider" | "id">;

/**
 * An assistant message with no content, zero usage and `stopReason: "stop"`, stamped now: a new
 * object each call (providers mutate their partial as it grows).
 */
export function createAssistantMessage(model: MessageOrigin): AssistantMessage {
	return {
		role: "assistant",
		content: [],
		api: model.api,
		provider: model.provider,
		model: model.id,
		usage: zeroUsage(),
		stopReason: "stop",
		timestamp: Date.now(),
	};
}
