/**
 * Token accounting of a model context: how many tokens the next model call will send.
 *
 * The figure is the last response's reported usage (what the provider counted for the context up
 * to that answer) plus an estimate of the messages added since (about 4 characters a token). A
 * {@link ContextMeter} does this incrementally: each measurement reads only the messages after
 * the last usable answer, or after the end of its previous measurement, so its cost per model call
 * does not grow with the transcript (bench/compaction).
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { AssistantMessage, Usage } from "../../../ai/types.js";
import { isCompaction } from "./types.js";

/** About how many characters make a token, across providers' tokenizers (an over-estimate for code and JSON). */
const CHARS_PER_TOKEN = 4;
/** What an image costs in context, whatever its size (providers scale them down to about this). */
const IMAGE_TOKENS = 1_200;

/** The estimated tokens of one transcript message (text, thinking, tool calls and results, images). */
export function estimateTokens(message: AgentMessage): number {
	if (isCompaction(message)) return Math.ceil(message.summary.length / CHARS_PER_TOKEN);
	const content = (message as { content?: unknown }).content;
	if (typeof content === "string") return Math.ceil(content.length / CHARS_PER_TOKEN);
	if (!Array.isArray(content)) return 0;
	let chars = 0;
	let images = 0;
	for (const block of content as { type?: string; [key: string]: unknown }[]) {
		switch (block.type) {
			case "text":
				chars += (block.text as string).length;
				break;
			case "thinking":
				chars += (block.thinking as string).length;
				break;
			case "toolCall":
				chars += (block.name as string).length + JSON.stringify(block.arguments ?? {}).length;
				break;
			case "image":
				images++;
				break;
		}
	}
	return Math.ceil(chars / CHARS_PER_TOKEN) + images * IMAGE_TOKENS;
}

/** Tokens of a context as a provider reported them with an answer (its input, cache and output). */
export function usageTokens(usage: Usage): number {
	return usage.totalTokens || usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
}

/** An answer whose usage measures its context: complete (not failed or aborted) and with a count. */
function reportedTokens(message: AgentMessage): number | undefined {
	if ((message as { role?: string }).role !== "assistant") return undefined;
	const answer = message as AssistantMessage;
	if (answer.stopReason === "error" || answer.stopReason === "aborted" || !answer.usage) return undefined;
	const tokens = usageTokens(answer.usage);
	return tokens > 0 ? tokens : undefined;
}

/**
 * Measures views of one session's context, remembering its last measurement. Not shared between
 * sessions (it holds message references of one transcript).
 */
export class ContextMeter {
	/** The last full measurement: `view[index]` was `message` and the view up to it counted `tokens`. */
	private last: { head: AgentMessage | undefined; index: number; message: AgentMessage; tokens: number } | undefined;

	/**
	 * Tokens of `view` (the messages the next model call sends, in order). Only answers at index
	 * `trustFrom` or later count with their reported usage: an older one measured a context that
	 * has been compacted since.
	 *
	 * 1. From the end backwards, estimate each message until an answer with usage (at or after
	 *    `trustFrom`) or the end of the last measurement of the same view is reached: that figure
	 *    plus the estimates is the answer.
	 * 2. Otherwise estimate the rest too (once per view: the result is remembered).
	 */
	measure(view: readonly AgentMessage[], trustFrom = 0): number {
		const head = view[0];
		const last = this.last?.head === head ? this.last : undefined;
		let added = 0;
		for (let i = view.length - 1; i >= 0; i--) {
			const message = view[i] as AgentMessage;
			if (last && i === last.index && last.message === message) return this.remember(view, last.tokens + added);
			if (i >= trustFrom) {
				const reported = reportedTokens(message);
				if (reported !== undefined) return this.remember(view, reported + added);
			}
			added += estimateTokens(message);
		}
		return this.remember(view, added);
	}

	private remember(view: readonly AgentMessage[], tokens: number): number {
		const index = view.length - 1;
		this.last = index >= 0 ? { head: view[0], index, message: view[index] as AgentMessage, tokens } : undefined;
		return tokens;
	}
}
