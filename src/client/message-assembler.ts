/** The client side of the compact wire format: wire events back into the AgentEvents the server emitted. */
import { createAssistantMessage } from "../ai/assistant-message.js";
import { parseStreamingJson } from "../ai/partial-json.js";
import type { AssistantMessage, AssistantMessageEvent } from "../ai/types.js";
import type { AgentEvent, AgentMessage, ServerEvent, WireAssistantMessageEvent, WireEvent } from "../wire/events.js";

type ContentBlock = AssistantMessage["content"][number];
type ToolCallBlock = Extract<ContentBlock, { type: "toolCall" }> & { partialJson?: string };

/** What {@link MessageAssembler.apply} returns: the full AgentEvent as the server's agent emitted it, or a server event. */
export type ExpandedEvent = AgentEvent | ServerEvent;

/**
 * Rebuilds the partial assistant message from the compact wire format (see `src/wire/events.ts`), so a UI
 * written against pi's `AgentEvent` works unchanged: {@link apply} turns each wire event back into
 * the AgentEvent the server's agent emitted — for `message_update`, with `assistantMessageEvent.partial`
 * and `message` equal to the server's partial at that point.
 *
 * Feed it every event of one session in id order (one assembler per session). It follows
 * `message_start` / `message_update` / `message_end`; a `session_snapshot` seeds it with the
 * in-flight message of a late join, and one with `reset: true` clears it.
 *
 * Mid-stream, message-level fields other than `content` (usage, responseId) are those of
 * `message_start`; `message_end` replaces the whole message with the server's final one.
 *
 * If a `message_update` arrives with no message to apply it to (a join mid-message without a
 * snapshot), it starts a placeholder assistant message and sets {@link incomplete}: the text from
 * that point on is right, what came before is missing.
 */
export class MessageAssembler {
	private partial: AssistantMessage | undefined;
	private last: AgentMessage | undefined;
	/** Raw argument JSON per tool-call block; `undefined` when it is unknown (joined mid-call). */
	private readonly argumentText = new Map<number, string | undefined>();
	/** Blocks whose server-side partial carries the raw JSON as `partialJson` (pi's providers do). */
	private readonly mirrorsPartialJson = new Set<number>();
	/** True when a `message_update` had to start from a placeholder message (see the class doc). */
	incomplete = false;

	/** The message streaming now, else the last message started or ended. */
	get message(): AgentMessage | undefined {
		return this.partial ?? this.last;
	}

	/** True between an assistant `message_start` and its `message_end`. */
	get isStreaming(): boolean {
		return this.partial !== undefined;
	}

	/** Forgets everything (a `session_snapshot` with `reset: true` does this itself). */
	reset(): void {
		this.partial = undefined;
		this.last = undefined;
		this.argumentText.clear();
		this.mirrorsPartialJson.clear();
		this.incomplete = false;
	}

	/** Applies one wire event and returns it expanded to the AgentEvent the server emitted. */
	apply(event: WireEvent): ExpandedEvent {
		switch (event.type) {
			case "message_start":
				this.start(event.message);
				return event;
			case "message_update":
				return this.update(event.assistantMessageEvent);
			case "message_end":
				this.partial = undefined;
				this.last = event.message;
				this.argumentText.clear();
				this.mirrorsPartialJson.clear();
				return event;
			case "session_snapshot":
				if (event.reset) this.reset();
				if (event.streamingMessage) this.start(event.streamingMessage);
				return event;
			default:
				return event;
		}
	}

	private start(message: AgentMessage): void {
		this.argumentText.clear();
		this.mirrorsPartialJson.clear();
		this.last = message;
		if ((message as { role?: string }).role !== "assistant") {
			this.partial = undefined;
			return;
		}
		// Our own copy: the deltas mutate it, and the caller's object may be the server's (in-process use).
		this.partial = structuredClone(message as AssistantMessage);
		this.partial.content.forEach((block, index) => {
			if (block.type !== "toolCall") return;
			const raw = (block as ToolCallBlock).partialJson;
			if (typeof raw === "string") this.mirrorsPartialJson.add(index);
			this.argumentText.set(index, raw);
		});
	}

	private update(wire: WireAssistantMessageEvent): AgentEvent {
		const partial = this.partial ?? this.startPlaceholder();
		const index = wire.contentIndex;
		switch (wire.type) {
			case "text_start":
			case "thinking_start":
			case "toolcall_start": {
				const block = structuredClone(wire.block);
				partial.content[index] = block;
				if (block.type === "toolCall") {
					const raw = (block as ToolCallBlock).partialJson;
					if (typeof raw === "string") this.mirrorsPartialJson.add(index);
					this.argumentText.set(index, raw ?? "");
				}
				break;
			}
			case "text_delta": {
				const block = this.blockAt(partial, index, "text");
				block.text += wire.delta;
				break;
			}
			case "thinking_delta": {
				const block = this.blockAt(partial, index, "thinking");
				block.thinking += wire.delta;
				break;
			}
			case "toolcall_delta": {
				const block = this.blockAt(partial, index, "toolCall") as ToolCallBlock;
				const before = this.argumentText.get(index);
				if (before === undefined) break; // joined mid-call: the arguments arrive whole at toolcall_end
				const raw = before + wire.delta;
				this.argumentText.set(index, raw);
				block.arguments = parseStreamingJson(raw);
				if (this.mirrorsPartialJson.has(index)) block.partialJson = raw;
				break;
			}
			case "text_end":
				partial.content[index] = { ...(wire.block as object), text: wire.content } as ContentBlock;
				break;
			case "thinking_end":
				partial.content[index] = { ...(wire.block as object), thinking: wire.content } as ContentBlock;
				break;
			case "toolcall_end":
				partial.content[index] = { ...(wire.block as object), arguments: wire.toolCall.arguments } as ContentBlock;
				this.argumentText.delete(index);
				break;
		}
		const { block: _block, ...fields } = wire as WireAssistantMessageEvent & { block?: unknown };
		const assistantMessageEvent = { ...fields, partial } as AssistantMessageEvent;
		return { type: "message_update", assistantMessageEvent, message: { ...partial } };
	}

	private blockAt<K extends ContentBlock["type"]>(
		partial: AssistantMessage,
		index: number,
		type: K,
	): Extract<ContentBlock, { type: K }> {
		const existing = partial.content[index];
		if (existing && existing.type === type) return existing as Extract<ContentBlock, { type: K }>;
		// A delta for a block we never saw start: render from here on.
		this.incomplete = true;
		const block = (
			type === "text"
				? { type, text: "" }
				: type === "thinking"
					? { type, thinking: "" }
					: { type, id: "", name: "", arguments: {} }
		) as Extract<ContentBlock, { type: K }>;
		partial.content[index] = block;
		if (type === "toolCall") this.argumentText.set(index, undefined);
		return block;
	}

	private startPlaceholder(): AssistantMessage {
		this.incomplete = true;
		// Timestamp 0: the real one arrives with the message's `message_end`.
		this.partial = { ...createAssistantMessage({ api: "unknown", provider: "unknown", id: "unknown" }), timestamp: 0 };
		this.last = this.partial;
		return this.partial;
	}
}
