/**
 * Encodes a stretch of a session's run as AG-UI events: the agent's events in, frames out.
 *
 * | agent event | AG-UI |
 * |---|---|
 * | `turn_start` / `turn_end` | `STEP_STARTED` / `STEP_FINISHED` (`turn 1`, `turn 2`, ... within the AG-UI run) |
 * | assistant text block | `TEXT_MESSAGE_START` / `_CONTENT`* / `_END` (one message id for all the text of a message) |
 * | thinking block | `REASONING_START`, `REASONING_MESSAGE_START` / `_CONTENT`* / `_END`, `REASONING_END` |
 * | tool call block | `TOOL_CALL_START` / `_ARGS`* / `_END`, `parentMessageId` the assistant message |
 * | tool result message (server tools) | `TOOL_CALL_RESULT` |
 * | user message the client did not send (steering, follow-up) | `TEXT_MESSAGE_START` (role `user`) / `_CONTENT` / `_END` |
 * | `queue_update`, `approval_requested`, `approval_resolved` | `CUSTOM` `wheelhouse.<type>` |
 * | `tool_result_requested` | nothing: the client's own tool call is already its `TOOL_CALL_*` events, and the run ends for the client to answer it |
 *
 * Ids are the transcript's (transcript.ts). Nothing is left open: `close()` ends every message,
 * reasoning span, tool call and step that is open, which the client's verifier requires before
 * `RUN_FINISHED`. A block the stream never announced (a provider that does not stream it, or a
 * tool call already half streamed when a reconnecting client joined) is sent whole at its end.
 */
import type { AgentEvent, AgentMessage } from "../../../agent/types.js";
import type { AssistantMessage, AssistantMessageEvent, ToolResultMessage, UserMessage } from "../../../ai/types.js";
import { textOf } from "../text.js";
import { type AguiEvent, aguiFrame, type CustomName, contentFrame, contentPrefix } from "./events.js";
import { type AguiProtocol, forProtocol } from "./protocol.js";
import { contentOf, messageId, reasoningId } from "./transcript.js";

export interface EncoderOptions {
	/** Receives each frame. */
	write(frame: string): void;
	/** Names of the client's tools: their results come from the client, which has them. */
	clientTools: ReadonlySet<string>;
	/** Messages the client sent itself (this run's prompt): not echoed. */
	sentByClient: ReadonlySet<AgentMessage>;
	/** The transcript's length now: the index the next message takes. */
	transcriptLength(): number;
	/** The generation of AG-UI the client reads (protocol.ts). */
	protocol: AguiProtocol;
}

/** State of one content block of the assistant message that streams. */
interface Block {
	kind: "text" | "thinking" | "toolCall";
	/** Its start went out (a tool call's, once its id and name are known). */
	announced: boolean;
	/** Its end went out. */
	closed: boolean;
	/** Tool call: its id, and the argument text received before it could be announced. */
	toolCallId?: string;
	pendingArgs?: string;
	/** Tool call joined halfway (reconnect): its arguments are sent whole at its end. */
	partial?: boolean;
	prefix?: string;
}

/** The native server events that become `CUSTOM` events. */
const CUSTOM_EVENTS = new Set(["queue_update", "approval_requested", "approval_resolved"]);

export class AguiEncoder {
	private turns = 0;
	private inTurn = false;
	/** The assistant message that streams: its id and its blocks by content index. */
	private message: { index: number; id: string; blocks: Map<number, Block>; textOpen: boolean } | undefined;
	/** Index of the message between its `message_start` and `message_end`. */
	private messageIndex = 0;

	constructor(private readonly options: EncoderOptions) {}

	/** `event` as a frame in the client's protocol. */
	frame(event: AguiEvent): string {
		return aguiFrame(forProtocol(event, this.options.protocol));
	}

	private emit(event: AguiEvent): void {
		this.options.write(this.frame(event));
	}

	/** Opens a step for a turn already under way (a stretch that resumes a run, a reconnect). */
	openTurn(): void {
		if (this.inTurn) return;
		this.turns++;
		this.inTurn = true;
		this.emit({ type: "STEP_STARTED", stepName: `turn ${this.turns}` });
	}

	private closeTurn(): void {
		if (!this.inTurn) return;
		this.inTurn = false;
		this.emit({ type: "STEP_FINISHED", stepName: `turn ${this.turns}` });
	}

	/** A native server event (`type` and its JSON data); the ones clients can use become `CUSTOM`. */
	serverEvent(type: string, data: string): void {
		if (!CUSTOM_EVENTS.has(type)) return;
		const { type: _type, ...value } = JSON.parse(data) as Record<string, unknown>;
		this.emit({ type: "CUSTOM", name: `wheelhouse.${type}` as CustomName, value });
	}

	agentEvent(event: AgentEvent): void {
		switch (event.type) {
			case "turn_start":
				this.closeTurn();
				this.openTurn();
				break;
			case "turn_end":
				this.closeTurn();
				break;
			case "message_start":
				this.messageIndex = this.options.transcriptLength();
				if (event.message.role === "assistant") this.startAssistant(this.messageIndex);
				break;
			case "message_update":
				this.update(event.assistantMessageEvent);
				break;
			case "message_end":
				this.endMessage(event.message);
				break;
		}
	}

	/**
	 * Announces an assistant message already streaming when the client joined (a reconnect): its
	 * finished blocks whole, its last block as open (a tool call is sent whole at its end instead).
	 */
	inFlight(message: AgentMessage | undefined): void {
		if ((message as { role?: string } | undefined)?.role !== "assistant") return;
		const partial = message as AssistantMessage;
		this.messageIndex = this.options.transcriptLength();
		this.startAssistant(this.messageIndex);
		const last = partial.content.length - 1;
		partial.content.forEach((block, i) => {
			if (block.type === "toolCall") {
				if (i < last) this.sendWhole(partial, i);
				else this.blockOf(i, "toolCall").partial = true;
				return;
			}
			const text = block.type === "text" ? block.text : block.thinking;
			this.openBlock(i, block.type);
			if (text !== "") this.delta(i, text);
			if (i < last) this.closeBlock(i);
		});
	}

	/** Ends everything open: messages, reasoning, tool calls, the step. Call before `RUN_FINISHED` / `RUN_ERROR`. */
	close(): void {
		if (this.message) this.closeAll();
		this.message = undefined;
		this.closeTurn();
	}

	// --- assistant messages ---------------------------------------------------------------------

	private startAssistant(index: number): void {
		this.message = { index, id: messageId(index), blocks: new Map(), textOpen: false };
	}

	private blockOf(index: number, kind: Block["kind"]): Block {
		const blocks = (this.message as NonNullable<AguiEncoder["message"]>).blocks;
		let block = blocks.get(index);
		if (!block) {
			block = { kind, announced: false, closed: false };
			blocks.set(index, block);
		}
		return block;
	}

	private update(update: AssistantMessageEvent): void {
		if (!this.message) return;
		switch (update.type) {
			case "text_start":
			case "thinking_start":
				this.openBlock(update.contentIndex, update.type === "text_start" ? "text" : "thinking");
				break;
			case "text_delta":
			case "thinking_delta": {
				const kind = update.type === "text_delta" ? "text" : "thinking";
				this.openBlock(update.contentIndex, kind);
				if (update.delta !== "") this.delta(update.contentIndex, update.delta);
				break;
			}
			case "text_end":
			case "thinking_end":
				this.closeBlock(update.contentIndex);
				break;
			case "toolcall_start":
			case "toolcall_delta": {
				const block = this.blockOf(update.contentIndex, "toolCall");
				if (block.partial || block.closed) break;
				const delta = update.type === "toolcall_delta" ? update.delta : "";
				if (block.announced) {
					if (delta !== "") this.options.write(contentFrame(block.prefix as string, delta));
					break;
				}
				block.pendingArgs = (block.pendingArgs ?? "") + delta;
				this.announceToolCall(update.partial, update.contentIndex, block);
				break;
			}
			case "toolcall_end": {
				const block = this.blockOf(update.contentIndex, "toolCall");
				if (!block.announced) this.sendWhole(update.partial, update.contentIndex);
				else this.closeBlock(update.contentIndex);
				break;
			}
		}
	}

	/** Starts a tool call once its id and name are known, with the argument text received so far. */
	private announceToolCall(partial: AssistantMessage, index: number, block: Block): void {
		const call = partial.content[index];
		if (call?.type !== "toolCall" || !call.id || !call.name) return;
		const message = this.message as NonNullable<AguiEncoder["message"]>;
		block.announced = true;
		block.toolCallId = call.id;
		block.prefix = contentPrefix("TOOL_CALL_ARGS", call.id);
		this.emit({ type: "TOOL_CALL_START", toolCallId: call.id, toolCallName: call.name, parentMessageId: message.id });
		if (block.pendingArgs) this.options.write(contentFrame(block.prefix, block.pendingArgs));
		block.pendingArgs = undefined;
	}

	private openBlock(index: number, kind: "text" | "thinking"): void {
		const message = this.message as NonNullable<AguiEncoder["message"]>;
		const block = this.blockOf(index, kind);
		if (block.announced) return;
		block.announced = true;
		if (kind === "text") {
			// All text of a message is one AG-UI message: a block after the first reopens the same id.
			block.prefix = contentPrefix("TEXT_MESSAGE_CONTENT", message.id);
			if (!message.textOpen) this.emit({ type: "TEXT_MESSAGE_START", messageId: message.id, role: "assistant" });
			message.textOpen = true;
			return;
		}
		const id = reasoningId(message.index, index);
		block.prefix = contentPrefix("REASONING_MESSAGE_CONTENT", id);
		this.emit({ type: "REASONING_START", messageId: id });
		this.emit({ type: "REASONING_MESSAGE_START", messageId: id, role: "reasoning" });
	}

	private delta(index: number, delta: string): void {
		const block = this.message?.blocks.get(index);
		if (block?.prefix && !block.closed) this.options.write(contentFrame(block.prefix, delta));
	}

	private closeBlock(index: number): void {
		const message = this.message;
		const block = message?.blocks.get(index);
		if (!message || !block?.announced || block.closed) return;
		block.closed = true;
		if (block.kind === "text") {
			if (message.textOpen) this.emit({ type: "TEXT_MESSAGE_END", messageId: message.id });
			message.textOpen = false;
		} else if (block.kind === "thinking") {
			const id = reasoningId(message.index, index);
			this.emit({ type: "REASONING_MESSAGE_END", messageId: id });
			this.emit({ type: "REASONING_END", messageId: id });
		} else {
			this.emit({ type: "TOOL_CALL_END", toolCallId: block.toolCallId as string });
		}
	}

	/** Sends block `index` of `message` whole (start, all of its content, end). */
	private sendWhole(message: AssistantMessage, index: number): void {
		const content = message.content[index];
		if (!content) return;
		if (content.type === "toolCall") {
			const block = this.blockOf(index, "toolCall");
			block.partial = false;
			block.pendingArgs = JSON.stringify(content.arguments ?? {});
			this.announceToolCall(message, index, block);
		} else {
			const text = content.type === "text" ? content.text : content.thinking;
			if (text === "") return;
			this.openBlock(index, content.type);
			this.delta(index, text);
		}
		this.closeBlock(index);
	}

	/** Ends the streaming message: blocks never announced are sent whole, open ones closed. */
	private closeAll(message?: AssistantMessage): void {
		const current = this.message as NonNullable<AguiEncoder["message"]>;
		if (message) {
			message.content.forEach((_block, i) => {
				const block = current.blocks.get(i);
				if (!block?.announced) this.sendWhole(message, i);
			});
		}
		for (const index of [...current.blocks.keys()].sort((a, b) => a - b)) this.closeBlock(index);
		// Text announced by an earlier block and reopened: make sure no text message stays open.
		if (current.textOpen) this.emit({ type: "TEXT_MESSAGE_END", messageId: current.id });
		current.textOpen = false;
	}

	// --- whole messages -------------------------------------------------------------------------

	private endMessage(message: AgentMessage): void {
		switch ((message as { role?: string }).role) {
			case "assistant":
				if (this.message) this.closeAll(message as AssistantMessage);
				this.message = undefined;
				break;
			case "toolResult": {
				const result = message as ToolResultMessage;
				if (this.options.clientTools.has(result.toolName)) break;
				this.emit({
					type: "TOOL_CALL_RESULT",
					messageId: messageId(this.messageIndex),
					toolCallId: result.toolCallId,
					content: contentOf(result.content),
					role: "tool",
				});
				break;
			}
			case "user": {
				if (this.options.sentByClient.has(message)) break;
				const id = messageId(this.messageIndex);
				const text = textOf((message as UserMessage).content);
				this.emit({ type: "TEXT_MESSAGE_START", messageId: id, role: "user" });
				if (text !== "") this.emit({ type: "TEXT_MESSAGE_CONTENT", messageId: id, delta: text });
				this.emit({ type: "TEXT_MESSAGE_END", messageId: id });
				break;
			}
		}
	}
}
