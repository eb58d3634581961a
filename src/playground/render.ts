/**
 * Renders transcript messages (user, assistant, tool result, anything else) to DOM elements.
 * Assistant text is Markdown: marked turns it into HTML and DOMPurify removes anything that
 * could run (scripts, handlers) or break the page's CSP (`style` attributes), before it is set.
 */
import DOMPurify from "dompurify";
import { marked } from "marked";

type Block = { type: string; text?: string; thinking?: string; name?: string; id?: string; arguments?: unknown };
type Usage = { input?: number; output?: number; totalTokens?: number; cost?: { total?: number } };
export type Message = {
	role: string;
	content?: string | Block[];
	timestamp?: number;
	toolName?: string;
	toolCallId?: string;
	isError?: boolean;
	stopReason?: string;
	errorMessage?: string;
	usage?: Usage;
	model?: string;
};

export function markdown(text: string): string {
	const html = marked.parse(text, { async: false, gfm: true, breaks: false }) as string;
	return DOMPurify.sanitize(html, { FORBID_ATTR: ["style"], FORBID_TAGS: ["style", "form", "input"] });
}

export function formatUsage(usage: Usage | undefined): string {
	if (!usage) return "";
	const cost = usage.cost?.total ?? 0;
	return `${usage.input ?? 0} in · ${usage.output ?? 0} out · $${cost.toFixed(cost < 0.01 ? 6 : 4)}`;
}

/** A new element with an optional class and text (never HTML). */
export function el<K extends keyof HTMLElementTagNameMap>(
	tag: K,
	className?: string,
	text?: string,
): HTMLElementTagNameMap[K] {
	const element = document.createElement(tag);
	if (className) element.className = className;
	if (text !== undefined) element.textContent = text;
	return element;
}

function textOf(content: Message["content"]): string {
	if (typeof content === "string") return content;
	return (content ?? [])
		.filter((b) => b.type === "text")
		.map((b) => b.text ?? "")
		.join("\n");
}

/** One message as an element; `streaming` marks the assistant message still arriving. */
export function renderMessage(message: Message, streaming = false): HTMLElement {
	const box = el("article", `msg ${message.role}`);
	box.dataset.role = message.role;
	if (streaming) box.setAttribute("aria-busy", "true");
	const roleName =
		message.role === "toolResult"
			? `tool result · ${message.toolName ?? ""}`
			: message.role === "user"
				? "you"
				: message.role;
	box.append(el("div", "role", roleName));

	if (message.role === "user") {
		box.append(el("div", "text", textOf(message.content)));
	} else if (message.role === "assistant") {
		for (const block of Array.isArray(message.content) ? message.content : []) {
			if (block.type === "text") {
				const text = el("div", "text markdown");
				text.innerHTML = markdown(block.text ?? "");
				box.append(text);
			} else if (block.type === "thinking") {
				const details = el("details", "thinking");
				details.append(el("summary", undefined, "Thinking"), el("pre", undefined, block.thinking ?? ""));
				box.append(details);
			} else if (block.type === "toolCall") {
				const call = el("div", "tool-call");
				call.append(el("strong", undefined, `Tool call: ${block.name ?? ""}`));
				call.append(el("pre", undefined, JSON.stringify(block.arguments ?? {}, null, 2)));
				box.append(call);
			}
		}
		if (message.stopReason === "error" || message.stopReason === "aborted") {
			box.append(el("p", "error", message.errorMessage ?? (message.stopReason === "aborted" ? "Aborted" : "Error")));
		}
		if (!streaming && message.usage) box.append(el("div", "usage", formatUsage(message.usage)));
	} else if (message.role === "toolResult") {
		if (message.isError) box.classList.add("is-error");
		box.append(el("pre", undefined, textOf(message.content)));
	} else {
		box.append(el("pre", undefined, JSON.stringify(message, null, 2)));
	}
	return box;
}
