/**
 * Encodes one model call's assistant-message events as the proxy events of pi's `streamProxy`
 * (`@mariozechner/pi-agent-core` 0.73.1, `proxy.ts`): the same events without `partial`, one
 * `data: <json>` frame each, LF only.
 *
 * The client rebuilds the message from these events alone: a text or thinking block is the
 * concatenation of its deltas plus the signature of its `*_end`; a tool call is the `id` and
 * `toolName` of its `toolcall_start` and the arguments parsed from its concatenated
 * `toolcall_delta` text; `done`/`error` set `stopReason`, `usage` and `errorMessage`. So the encoder
 * keeps a mirror of what the client holds, and where a block's final form differs from it (a
 * provider that learns a tool call's id late, replaces its argument text with a final version, or
 * cleans up text at the end) it sends the block again whole — its `*_start`, which makes the client
 * start that block afresh, one delta with the full content, its `*_end` — so the client's message
 * always ends equal to the server's.
 *
 * What the protocol cannot carry, and the client therefore never has: `responseId`,
 * `responseModel`, `diagnostics`, `redacted` on thinking, a tool call's `thoughtSignature`; the
 * client's message takes `api`, `provider`, `model` and `timestamp` from its own side.
 */
import type { AssistantMessage, AssistantMessageEvent, Usage } from "../../../ai/types.js";
import { zeroUsage } from "../../../ai/usage.js";
import { formatFrame } from "../../../wire/sse-frames.js";

/** The proxy events of pi-agent-core 0.73.1 (`ProxyAssistantMessageEvent`). */
export type ProxyEvent =
	| { type: "start" }
	| { type: "text_start" | "thinking_start"; contentIndex: number }
	| { type: "text_delta" | "thinking_delta" | "toolcall_delta"; contentIndex: number; delta: string }
	| { type: "text_end" | "thinking_end"; contentIndex: number; contentSignature?: string }
	| { type: "toolcall_start"; contentIndex: number; id: string; toolName: string }
	| { type: "toolcall_end"; contentIndex: number }
	| { type: "done"; reason: "stop" | "length" | "toolUse"; usage: Usage }
	| { type: "error"; reason: "error" | "aborted"; errorMessage?: string; usage: Usage };

/** What the client holds for one content block, from the events sent so far. */
type Mirror =
	| { type: "text" | "thinking"; text: string; signature?: string }
	| { type: "toolCall"; id: string; name: string; json: string };

type Block = AssistantMessage["content"][number];

export function proxyFrame(event: ProxyEvent): string {
	return formatFrame({ data: JSON.stringify(event) });
}

/** The arguments the client parses from `json` (exact JSON only: anything else is sent again). */
function argumentsOf(json: string): unknown {
	if (json === "") return {};
	try {
		return JSON.parse(json);
	} catch {
		return undefined;
	}
}

function mirrors(mirror: Mirror | undefined, block: Block): boolean {
	if (!mirror) return false;
	switch (block.type) {
		case "text":
			return mirror.type === "text" && mirror.text === block.text && mirror.signature === block.textSignature;
		case "thinking":
			return (
				mirror.type === "thinking" && mirror.text === block.thinking && mirror.signature === block.thinkingSignature
			);
		case "toolCall":
			return (
				mirror.type === "toolCall" &&
				mirror.id === block.id &&
				mirror.name === block.name &&
				JSON.stringify(argumentsOf(mirror.json)) === JSON.stringify(block.arguments ?? {})
			);
	}
}

/**
 * One model call's encoder. Feed it the call's events in order ({@link encode}); after a `done` or
 * `error` it is {@link finished} and ignores the rest.
 */
export class ProxyEncoder {
	private readonly blocks: Mirror[] = [];
	/** The usage of the latest partial message (what a failure the server adds reports). */
	private usage: Usage = zeroUsage();
	/** True once the terminal event (`done` or `error`) was encoded. */
	finished = false;

	/** The first frame of every stream, sent before the model answers. */
	start(): string {
		return proxyFrame({ type: "start" });
	}

	/** The frames for one event (possibly none). */
	encode(event: AssistantMessageEvent): string {
		if (this.finished) return "";
		if ("partial" in event) this.usage = event.partial.usage;
		switch (event.type) {
			case "start":
				return ""; // sent when the stream opened
			case "text_start":
			case "thinking_start":
				this.blocks[event.contentIndex] = { type: event.type === "text_start" ? "text" : "thinking", text: "" };
				return proxyFrame({ type: event.type, contentIndex: event.contentIndex });
			case "text_delta":
			case "thinking_delta": {
				const kind = event.type === "text_delta" ? "text" : "thinking";
				const mirror = this.blocks[event.contentIndex];
				if (mirror?.type !== kind) return ""; // a delta without its start: the block is sent whole at its end
				mirror.text += event.delta;
				return proxyFrame({ type: event.type, contentIndex: event.contentIndex, delta: event.delta });
			}
			case "toolcall_start": {
				const block = event.partial.content[event.contentIndex];
				if (block?.type !== "toolCall") return "";
				this.blocks[event.contentIndex] = { type: "toolCall", id: block.id, name: block.name, json: "" };
				return proxyFrame({
					type: "toolcall_start",
					contentIndex: event.contentIndex,
					id: block.id,
					toolName: block.name,
				});
			}
			case "toolcall_delta": {
				const mirror = this.blocks[event.contentIndex];
				if (mirror?.type !== "toolCall") return "";
				mirror.json += event.delta;
				return proxyFrame({ type: "toolcall_delta", contentIndex: event.contentIndex, delta: event.delta });
			}
			case "text_end":
			case "thinking_end":
			case "toolcall_end": {
				const block = event.type === "toolcall_end" ? event.toolCall : event.partial.content[event.contentIndex];
				return block ? this.endBlock(event.contentIndex, block) : "";
			}
			case "done":
				this.finished = true;
				return `${this.reconcile(event.message)}${proxyFrame({ type: "done", reason: event.reason, usage: event.message.usage })}`;
			case "error":
				this.finished = true;
				return `${this.reconcile(event.error)}${proxyFrame({
					type: "error",
					reason: event.reason,
					...(event.error.errorMessage !== undefined ? { errorMessage: event.error.errorMessage } : {}),
					usage: event.error.usage,
				})}`;
		}
	}

	/** A failure the server adds (the model stream broke its contract, the reader fell behind): the last frame. */
	fail(errorMessage: string, reason: "error" | "aborted" = "error"): string {
		if (this.finished) return "";
		this.finished = true;
		return proxyFrame({ type: "error", reason, errorMessage, usage: this.usage });
	}

	/** Ends a block: its `*_end` when the client holds its content as it is, else the whole block again. */
	private endBlock(index: number, block: Block): string {
		return holdsContent(this.blocks[index], block) ? this.closeFrame(index, block) : this.sendWhole(index, block);
	}

	/** The `*_end` frame of `block`, recording its signature in the mirror. */
	private closeFrame(index: number, block: Block): string {
		const mirror = this.blocks[index]!;
		if (block.type === "toolCall") return proxyFrame({ type: "toolcall_end", contentIndex: index });
		const contentSignature = block.type === "text" ? block.textSignature : block.thinkingSignature;
		if (mirror.type !== "toolCall") mirror.signature = contentSignature;
		return proxyFrame({
			type: block.type === "text" ? "text_end" : "thinking_end",
			contentIndex: index,
			...(contentSignature !== undefined ? { contentSignature } : {}),
		});
	}

	/** The block as a fresh start, one delta with all of it, and its end. */
	private sendWhole(index: number, block: Block): string {
		if (block.type === "toolCall") {
			const json = JSON.stringify(block.arguments ?? {});
			this.blocks[index] = { type: "toolCall", id: block.id, name: block.name, json };
			return (
				proxyFrame({ type: "toolcall_start", contentIndex: index, id: block.id, toolName: block.name }) +
				proxyFrame({ type: "toolcall_delta", contentIndex: index, delta: json }) +
				this.closeFrame(index, block)
			);
		}
		const text = block.type === "text" ? block.text : block.thinking;
		this.blocks[index] = { type: block.type, text };
		const start = proxyFrame({ type: block.type === "text" ? "text_start" : "thinking_start", contentIndex: index });
		const delta =
			text === ""
				? ""
				: proxyFrame({
						type: block.type === "text" ? "text_delta" : "thinking_delta",
						contentIndex: index,
						delta: text,
					});
		return start + delta + this.closeFrame(index, block);
	}

	/** Before the terminal event: every block of the final message the client does not hold as it is. */
	private reconcile(message: AssistantMessage): string {
		let frames = "";
		message.content.forEach((block, index) => {
			if (!mirrors(this.blocks[index], block)) frames += this.sendWhole(index, block);
		});
		return frames;
	}
}

/** Whether the client holds `block`'s content (not yet its signature, which its `*_end` brings). */
function holdsContent(mirror: Mirror | undefined, block: Block): boolean {
	if (!mirror || block.type === "toolCall") return mirrors(mirror, block);
	return mirror.type === block.type && mirror.text === (block.type === "text" ? block.text : block.thinking);
}
