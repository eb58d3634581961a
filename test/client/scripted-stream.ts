import type { AgentEvent } from "../../src/agent/types.js";
import { parseStreamingJson } from "../../src/ai/partial-json.js";
import type { AssistantMessage, AssistantMessageEvent } from "../../src/ai/types.js";

/** One content block a scripted provider streams: text, thinking, or a tool call whose argument JSON arrives in pieces. */
export type ScriptedBlock =
	| { type: "text"; deltas: string[]; signature?: string }
	| { type: "thinking"; deltas: string[]; signature?: string }
	| { type: "toolCall"; id: string; name: string; jsonDeltas: string[]; keepPartialJson?: boolean };

function emptyMessage(): AssistantMessage {
	return {
		role: "assistant",
		content: [],
		api: "faux",
		provider: "faux",
		model: "scripted",
		usage: {
			input: 3,
			output: 0,
			cacheRead: 0,
			cacheWrite: 0,
			totalTokens: 3,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		},
		stopReason: "stop",
		timestamp: 1_700_000_000_000,
	};
}

/**
 * Emits the AgentEvents the agent loop emits for one streamed assistant message, mutating one
 * partial in place exactly as pi's providers and loop do (message_start/update carry `{...partial}`,
 * `assistantMessageEvent.partial` is the live partial). `onEvent` runs synchronously per event,
 * as an Agent listener would.
 */
export function emitScriptedMessage(blocks: ScriptedBlock[], onEvent: (event: AgentEvent) => void): AssistantMessage {
	const partial = emptyMessage();
	const update = (assistantMessageEvent: AssistantMessageEvent) =>
		onEvent({ type: "message_update", assistantMessageEvent, message: { ...partial } });
	onEvent({ type: "message_start", message: { ...partial } });
	blocks.forEach((spec, contentIndex) => {
		if (spec.type === "text") {
			const block = { type: "text" as const, text: "" } as AssistantMessage["content"][number] & { type: "text" };
			partial.content.push(block);
			update({ type: "text_start", contentIndex, partial });
			for (const delta of spec.deltas) {
				block.text += delta;
				update({ type: "text_delta", contentIndex, delta, partial });
			}
			if (spec.signature) block.textSignature = spec.signature;
			update({ type: "text_end", contentIndex, content: block.text, partial });
		} else if (spec.type === "thinking") {
			const block = { type: "thinking" as const, thinking: "" } as AssistantMessage["content"][number] & {
				type: "thinking";
			};
			partial.content.push(block);
			update({ type: "thinking_start", contentIndex, partial });
			for (const delta of spec.deltas) {
				block.thinking += delta;
				update({ type: "thinking_delta", contentIndex, delta, partial });
			}
			if (spec.signature) block.thinkingSignature = spec.signature;
			update({ type: "thinking_end", contentIndex, content: block.thinking, partial });
		} else {
			const block: any = { type: "toolCall", id: spec.id, name: spec.name, arguments: {} };
			if (spec.keepPartialJson) block.partialJson = "";
			let raw = "";
			partial.content.push(block);
			update({ type: "toolcall_start", contentIndex, partial });
			for (const delta of spec.jsonDeltas) {
				raw += delta;
				block.arguments = parseStreamingJson(raw);
				if (spec.keepPartialJson) block.partialJson = raw;
				update({ type: "toolcall_delta", contentIndex, delta, partial });
			}
			block.arguments = JSON.parse(raw);
			delete block.partialJson;
			update({ type: "toolcall_end", contentIndex, toolCall: block, partial });
		}
	});
	partial.usage = { ...partial.usage, output: 42, totalTokens: 45 };
	partial.stopReason = blocks.some((b) => b.type === "toolCall") ? "toolUse" : "stop";
	partial.responseId = "resp_1";
	onEvent({ type: "message_end", message: partial });
	return partial;
}

/** Splits `text` into pieces of `size` characters. */
export function chunks(text: string, size: number): string[] {
	const out: string[] = [];
	for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
	return out;
}
