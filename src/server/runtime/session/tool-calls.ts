/**
 * The tool calls a transcript holds, by id: what a facade's tool result may answer (a client
 * tool's output names its call by id only, and the result needs the tool's name).
 */
import type { AgentMessage } from "../../../agent/types.js";

/** The ids of the tool calls in `messages`' assistant messages, each with its tool's name. */
export function toolCallsOf(messages: readonly AgentMessage[]): Map<string, string> {
	const calls = new Map<string, string>();
	for (const message of messages as readonly { role?: string; content?: unknown }[]) {
		if (message.role !== "assistant" || !Array.isArray(message.content)) continue;
		for (const block of message.content as { type?: string; id?: string; name?: string }[]) {
			if (block.type === "toolCall" && block.id && block.name) calls.set(block.id, block.name);
		}
	}
	return calls;
}
