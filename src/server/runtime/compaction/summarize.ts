/**
 * The summary request: the older messages as one text, the previous summary to fold in, the
 * sections the summary must have, and the model call that writes it (the session's own model).
 */
import type { AgentMessage } from "../../../agent/types.js";
import { streamSimple } from "../../../ai/stream.js";
import type { AssistantMessage, Context, Model, Usage } from "../../../ai/types.js";
import { zeroUsage } from "../../../ai/usage.js";
import type { ModelCallWatch } from "../../observability/model-call-metrics.js";
import { type CompactionMessage, isCompaction } from "./types.js";

export const SUMMARY_SYSTEM_PROMPT =
	"You summarise conversations between a user and an AI assistant that uses tools, for the assistant itself: " +
	"its context window is full, and the summary will replace the older messages. Output only the summary, in " +
	"Markdown, with the sections asked for. Do not answer the user and do not continue the conversation.";

/** The sections of every summary, in order. */
export const SUMMARY_SECTIONS = [
	"Goal",
	"Constraints",
	"Decisions",
	"State of the work",
	"Open questions",
	"Next steps",
] as const;

/** A tool result or message longer than this is cut in the summary request (the summary needs its gist). */
const MAX_RESULT_CHARS = 2_000;
const MAX_MESSAGE_CHARS = 8_000;

function clip(text: string, max: number): string {
	return text.length > max ? `${text.slice(0, max)}… [${text.length - max} more characters]` : text;
}

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.map((block: { type?: string; text?: string }) =>
			block.type === "text" ? (block.text ?? "") : block.type === "image" ? "[image]" : "",
		)
		.filter((part) => part !== "")
		.join("\n");
}

/** One message as lines of the conversation text (none for messages the model never saw). */
export function serializeMessage(message: AgentMessage): string[] {
	switch ((message as { role?: string }).role) {
		case "user":
			return [`[User]: ${clip(textOf((message as { content: unknown }).content), MAX_MESSAGE_CHARS)}`];
		case "assistant": {
			const answer = message as AssistantMessage;
			if (answer.stopReason === "error" || answer.stopReason === "aborted") return [];
			const lines: string[] = [];
			for (const block of answer.content) {
				if (block.type === "text" && block.text.trim() !== "")
					lines.push(`[Assistant]: ${clip(block.text, MAX_MESSAGE_CHARS)}`);
				if (block.type === "toolCall")
					lines.push(`[Assistant tool call ${block.name}]: ${clip(JSON.stringify(block.arguments), MAX_RESULT_CHARS)}`);
			}
			return lines;
		}
		case "toolResult": {
			const result = message as { toolName: string; isError: boolean; content: unknown };
			const label = `${result.toolName}${result.isError ? " (error)" : ""}`;
			return [`[Tool result ${label}]: ${clip(textOf(result.content), MAX_RESULT_CHARS)}`];
		}
		default:
			return [];
	}
}

/**
 * The user message of the summary request. `previous` is the summary being folded in;
 * `budgetChars` bounds the conversation text: when it is longer, its oldest lines are left out
 * (and the text says how many), so the request itself fits the model's window.
 */
export function summaryPrompt(
	messages: readonly AgentMessage[],
	previous: CompactionMessage | undefined,
	instructions: string | undefined,
	budgetChars: number,
): string {
	const lines = messages.filter((m) => !isCompaction(m)).flatMap(serializeMessage);
	let used = 0;
	let first = lines.length;
	while (first > 0 && used + (lines[first - 1] as string).length + 1 <= budgetChars) {
		first--;
		used += (lines[first] as string).length + 1;
	}
	const omitted = first > 0 ? [`[${first} earlier lines left out: they did not fit]`] : [];
	const parts = [
		previous
			? "The earlier part of the conversation was already summarised. Update that summary with the newer messages below: keep what still holds, change what the messages changed, drop what no longer matters."
			: "Summarise the conversation below.",
	];
	if (previous) parts.push(`<previous-summary>\n${previous.summary}\n</previous-summary>`);
	parts.push(`<conversation>\n${[...omitted, ...lines.slice(first)].join("\n")}\n</conversation>`);
	parts.push(
		`Write the summary with exactly these sections, as Markdown headings: ${SUMMARY_SECTIONS.map((s) => `## ${s}`).join(", ")}. ` +
			"Keep names, paths, identifiers, numbers and error messages exactly as written. Be brief; write 'None' in a section with nothing to say.",
	);
	if (instructions) parts.push(`Also: ${instructions}`);
	return parts.join("\n\n");
}

/** What a summary call produced: the summary, or why there is none; and what it cost. */
export type SummaryOutcome =
	| { kind: "summary"; summary: string; usage: Usage }
	| { kind: "failed"; errorMessage: string; usage: Usage; aborted: boolean };

export interface SummaryCall {
	model: Model<any>;
	apiKey: string | undefined;
	/** Output cap of the call. */
	maxTokens: number;
	timeoutMs: number | undefined;
	signal: AbortSignal | undefined;
	/** The call in the model metrics (absent: metrics off). */
	watch?: ModelCallWatch;
}

/** Runs the summary request on the session's model. Never throws: a failure is an outcome. */
export async function requestSummary(prompt: string, call: SummaryCall): Promise<SummaryOutcome> {
	const context: Context = {
		systemPrompt: SUMMARY_SYSTEM_PROMPT,
		messages: [{ role: "user", content: [{ type: "text", text: prompt }], timestamp: Date.now() }],
	};
	try {
		const stream = streamSimple(call.model, context, {
			apiKey: call.apiKey,
			signal: call.signal,
			maxTokens: call.maxTokens,
			...(call.timeoutMs !== undefined ? { timeoutMs: call.timeoutMs } : {}),
		});
		const message = await stream.result();
		call.watch?.end(message);
		const usage = message.usage ?? zeroUsage();
		if (message.stopReason === "error" || message.stopReason === "aborted") {
			return {
				kind: "failed",
				errorMessage: message.errorMessage ?? "the summary call failed",
				usage,
				aborted: message.stopReason === "aborted",
			};
		}
		const summary = message.content
			.filter((block) => block.type === "text")
			.map((block) => block.text)
			.join("\n")
			.trim();
		if (summary === "")
			return { kind: "failed", errorMessage: "the model returned an empty summary", usage, aborted: false };
		return { kind: "summary", summary, usage };
	} catch (err) {
		return {
			kind: "failed",
			errorMessage: err instanceof Error ? err.message : String(err),
			usage: zeroUsage(),
			aborted: call.signal?.aborted === true,
		};
	}
}
