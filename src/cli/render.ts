/** How the command line shows events, messages and sessions as text. */
import type { ReceivedEvent, SessionSummary } from "../client/index.js";

/** Colours only when the output is a terminal and `NO_COLOR` is unset. */
export interface Style {
	dim(text: string): string;
	bold(text: string): string;
	red(text: string): string;
	green(text: string): string;
	yellow(text: string): string;
	cyan(text: string): string;
}

export function style(enabled: boolean): Style {
	const wrap = (open: number, close: number) => (text: string) =>
		enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text;
	return {
		dim: wrap(2, 22),
		bold: wrap(1, 22),
		red: wrap(31, 39),
		green: wrap(32, 39),
		yellow: wrap(33, 39),
		cyan: wrap(36, 39),
	};
}

/** A value shortened to one line of at most `max` characters. */
export function brief(value: unknown, max = 120): string {
	const text = (typeof value === "string" ? value : (JSON.stringify(value) ?? "")).replace(/\s+/g, " ");
	return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The text of a message's content (a string, or its text blocks joined). */
export function textOf(message: unknown): string {
	const content = (message as { content?: unknown } | undefined)?.content;
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((block): block is { type: "text"; text: string } => block?.type === "text")
		.map((block) => block.text)
		.join("");
}

/** What a message says, on one line: its text, else its tool calls, else nothing (an answer about to stream). */
function contentLine(message: { content?: unknown }): string {
	const text = textOf(message);
	if (text) return brief(text, 160);
	if (!Array.isArray(message.content)) return "";
	const calls = message.content
		.filter((block) => block?.type === "toolCall")
		.map((block) => `${block.name}(${brief(block.arguments, 60)})`);
	return calls.length ? brief(calls.join(", "), 160) : "";
}

/** How a run ended, from its `agent_end` (or a final `run_interrupted`). */
export type RunOutcome = "completed" | "failed" | "aborted" | "interrupted";

export function outcomeOf(event: ReceivedEvent): { outcome: RunOutcome; error?: string } {
	if (event.type === "run_interrupted") return { outcome: "interrupted" };
	const messages = (event.data as { messages?: unknown[] }).messages ?? [];
	const last = [...messages].reverse().find((m) => (m as { role?: string }).role === "assistant") as
		| { stopReason?: string; errorMessage?: string }
		| undefined;
	if (last?.stopReason === "aborted") return { outcome: "aborted" };
	if (last?.stopReason === "error") return { outcome: "failed", error: last.errorMessage };
	return { outcome: "completed" };
}

/** One line per event for `tail`: the id, the type, and what matters of it. */
export function eventLine(event: ReceivedEvent, s: Style): string | undefined {
	const data = event.data as any;
	const id = s.dim(`#${event.id ?? "-"}`.padEnd(6));
	const name = (text: string) => `${id} ${s.cyan(event.type.padEnd(20))} ${text}`;
	switch (event.type) {
		case "message_update": {
			const inner = data.assistantMessageEvent;
			if (inner?.type === "text_delta" || inner?.type === "thinking_delta") return undefined;
			if (inner?.type === "text_end") return name(brief(inner.content, 200));
			if (inner?.type === "toolcall_end") return name(`${inner.toolCall?.name}(${brief(inner.toolCall?.arguments)})`);
			return undefined;
		}
		case "message_start":
		case "message_end": {
			const message = data.message ?? {};
			const detail = message.role === "assistant" && event.type === "message_end" ? ` [${message.stopReason}]` : "";
			const content = contentLine(message);
			return name(`${message.role}${detail}${content ? `: ${content}` : ""}`);
		}
		case "turn_end": {
			const stop = data.message?.stopReason;
			const results = (data.toolResults ?? []).length;
			return name(
				`${stop ? `[${stop}]` : ""}${results ? ` ${results} tool result${results === 1 ? "" : "s"}` : ""}`.trim(),
			);
		}
		case "tool_execution_start":
			return name(`${data.toolName}(${brief(data.args)})`);
		case "tool_execution_end":
			return name(
				`${data.toolName} ${data.isError ? s.red("error") : s.green("ok")}: ${brief(textOf(data.result) || data.result)}`,
			);
		case "approval_requested":
			return name(s.yellow(`${data.toolName}(${brief(data.args)}) waits for approval`));
		case "approval_resolved":
			return name(`${data.toolName}: ${data.outcome?.kind}`);
		case "tool_result_requested":
			return name(s.yellow(`${data.toolName}(${brief(data.args)}) waits for your result`));
		case "queue_update":
			return name(
				`${data.action} ${data.kind ?? ""} (steering ${data.steeringCount}, follow-up ${data.followUpCount})`,
			);
		case "agent_end": {
			const { outcome, error } = outcomeOf(event);
			return name(outcome === "completed" ? s.green(outcome) : s.red(`${outcome}${error ? `: ${error}` : ""}`));
		}
		case "session_snapshot":
			return name(`status ${data.state?.status ?? "?"}, ${data.state?.messageCount ?? "?"} messages`);
		case "run_interrupted":
			return name(s.red(`run ${data.runId} interrupted${data.willContinue ? ", continuing" : ""}`));
		default:
			return name(brief(Object.fromEntries(Object.entries(data ?? {}).filter(([k]) => k !== "type")), 160));
	}
}

/** One line per session for `/sessions`. */
export function sessionLine(session: SessionSummary, s: Style, current?: string): string {
	const title = session.metadata?.title ? ` ${brief(session.metadata.title, 40)}` : "";
	const when = new Date(session.lastActiveAt ?? session.updatedAt).toISOString().slice(0, 16).replace("T", " ");
	const mark = session.id === current ? s.green("*") : " ";
	return `${mark} ${session.id}  ${s.dim(when)}  ${session.model}  ${session.status}  ${session.messageCount} msgs${title}`;
}
