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

/** The text of a content field (its text blocks, one per line). */
export function textOf(content: Message["content"]): string {
	if (typeof content === "string") return content;
	return (content ?? [])
		.filter((b) => b.type === "text")
		.map((b) => b.text ?? "")
		.join("\n");
}

/**
 * A tool call as a card: the tool's name, its state, the arguments and, once it arrives
 * ({@link fillToolCard}), the result. `data-tool-call-id` finds it again.
 */
function toolCard(block: Block): HTMLElement {
	const card = el("section", "tool-card");
	card.dataset.toolCallId = block.id ?? "";
	card.dataset.state = "running";
	const headingId = `tool-${block.id ?? Math.random().toString(36).slice(2)}`;
	const heading = el("h3", undefined, `Tool call: ${block.name ?? ""}`);
	heading.id = headingId;
	card.setAttribute("aria-labelledby", headingId);
	const state = el("span", "tool-state", "running…");
	heading.append(" ", state);
	const args = el("details", "tool-args");
	args.open = true;
	args.append(
		el("summary", undefined, "Arguments"),
		el("pre", undefined, JSON.stringify(block.arguments ?? {}, null, 2)),
	);
	const result = el("details", "tool-result");
	result.open = true;
	result.hidden = true;
	result.append(el("summary", undefined, "Result"), el("pre"));
	card.append(heading, args, result);
	return card;
}

/** Says what a tool call's card is waiting for (an approval, the tool) until its result arrives. */
export function setToolCardState(card: HTMLElement, text: string): void {
	const state = card.querySelector(".tool-state");
	if (state && card.dataset.state === "running") state.textContent = text;
}

/** Puts a tool result into its call's card: the text, and the state (done or error). */
export function fillToolCard(card: HTMLElement, result: Message): void {
	card.dataset.state = result.isError ? "error" : "done";
	const state = card.querySelector(".tool-state");
	if (state) state.textContent = result.isError ? "failed" : "done";
	const box = card.querySelector<HTMLElement>(".tool-result");
	if (!box) return;
	box.hidden = false;
	box.querySelector("pre")!.textContent = textOf(result.content);
	box.querySelector("summary")!.textContent = result.isError ? "Error" : "Result";
}

/** What a run (or any stretch of a transcript) cost: its assistant messages' usage added up. */
export function sumUsage(messages: Message[]): { calls: number; usage: Usage } {
	const usage = { input: 0, output: 0, totalTokens: 0, cost: { total: 0 } };
	let calls = 0;
	for (const m of messages) {
		if (m.role !== "assistant" || !m.usage) continue;
		calls++;
		usage.input += m.usage.input ?? 0;
		usage.output += m.usage.output ?? 0;
		usage.totalTokens += m.usage.totalTokens ?? 0;
		usage.cost.total += m.usage.cost?.total ?? 0;
	}
	return { calls, usage };
}

/** The line under a run: its model calls, tokens and cost. */
export function runUsageLine(messages: Message[]): HTMLElement | undefined {
	const { calls, usage } = sumUsage(messages);
	if (calls === 0) return undefined;
	return el("p", "run-usage", `Run: ${calls} model call${calls === 1 ? "" : "s"} · ${formatUsage(usage)}`);
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
				box.append(toolCard(block));
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
