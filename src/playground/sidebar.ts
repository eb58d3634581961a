/**
 * The left column: the model and tool pickers filled from the catalog, the body of a new session
 * read from the form, and the session list's entries (title, order, search). DOM only; requests are the caller's.
 */
import { TITLE_KEY } from "../client/session-title.js";
import type { PageElements } from "./page.js";
import { el } from "./render.js";

type CatalogModel = { id: string; name?: string; available?: boolean; standIn?: boolean };
type CatalogTool = { name: string; description?: string };

/**
 * Fills the model picker (`GET /v1/models`): stand-ins and models without a key are marked, the
 * latter disabled. Returns how many can be picked.
 */
export function fillModels(
	select: HTMLSelectElement,
	models: CatalogModel[],
	defaultModel: string | undefined,
): number {
	select.replaceChildren();
	for (const m of models) {
		const label = `${m.id}${m.standIn ? " (stand-in)" : ""}${m.available === false ? " (no key)" : ""}`;
		const option = new Option(label, m.id, m.id === defaultModel, m.id === defaultModel);
		option.disabled = m.available === false;
		select.append(option);
	}
	return models.filter((m) => m.available !== false).length;
}

/** Fills the tool list (`GET /v1/tools`): per tool an "enable" box (checked) and an "ask for approval" box. */
export function fillTools(list: HTMLElement, tools: CatalogTool[]): void {
	list.replaceChildren();
	for (const tool of tools) {
		const row = el("div", "tool-row");
		const enable = el("input");
		enable.type = "checkbox";
		enable.checked = true;
		enable.id = `tool-${tool.name}`;
		enable.dataset.tool = tool.name;
		enable.dataset.role = "enable";
		const enableLabel = el("label", undefined, tool.name);
		enableLabel.htmlFor = enable.id;
		enableLabel.title = tool.description ?? "";
		const approve = el("input");
		approve.type = "checkbox";
		approve.id = `approve-${tool.name}`;
		approve.dataset.tool = tool.name;
		approve.dataset.role = "approve";
		const approveLabel = el("label", undefined, "ask");
		approveLabel.htmlFor = approve.id;
		approve.setAttribute("aria-label", `Ask for approval before ${tool.name} runs`);
		row.append(enable, enableLabel, approve, approveLabel);
		list.append(row);
	}
}

/**
 * The `POST /v1/sessions` body from the form: `tools` only when some are unchecked, approvals for
 * the tools marked "ask". Throws when the client tools box is not valid JSON (the page shows it).
 */
export function newSessionBody(ui: PageElements): Record<string, unknown> {
	const body: Record<string, unknown> = {
		model: ui.model.value,
		thinkingLevel: ui.thinking.value,
		toolExecution: ui.toolExecution.value,
	};
	if (ui.systemPrompt.value.trim()) body.systemPrompt = ui.systemPrompt.value;
	const boxes = [...ui.toolList.querySelectorAll<HTMLInputElement>("input[type=checkbox]")];
	const enabled = boxes.filter((b) => b.dataset.role === "enable");
	if (enabled.some((b) => !b.checked)) body.tools = enabled.filter((b) => b.checked).map((b) => b.dataset.tool);
	const approvals = boxes.filter((b) => b.dataset.role === "approve" && b.checked);
	if (approvals.length > 0) body.toolApprovals = Object.fromEntries(approvals.map((b) => [b.dataset.tool, "always"]));
	if (ui.clientTools.value.trim()) {
		try {
			body.clientTools = JSON.parse(ui.clientTools.value);
		} catch (error) {
			throw new Error(`Client tools: not valid JSON (${(error as Error).message})`);
		}
	}
	return body;
}

/** A session as `GET /v1/sessions` lists it. */
export type SessionSummary = {
	id: string;
	model: string;
	status: string;
	messageCount: number;
	createdAt?: number;
	lastActiveAt?: number;
	metadata?: Record<string, string>;
};

/** What a session is called in the list: its title, else "Untitled" and the end of its id (ids share their start). */
export function sessionName(session: SessionSummary): string {
	return session.metadata?.[TITLE_KEY]?.trim() || `Untitled ${session.id.slice(-6)}`;
}

/** Newest activity first (then newest created). */
export function newestFirst(a: SessionSummary, b: SessionSummary): number {
	return (
		(b.lastActiveAt ?? b.createdAt ?? 0) - (a.lastActiveAt ?? a.createdAt ?? 0) ||
		(b.createdAt ?? 0) - (a.createdAt ?? 0)
	);
}

/** Whether a session matches the search box: every word in its title, id or model. */
export function matchesSearch(session: SessionSummary, query: string): boolean {
	const haystack = `${sessionName(session)} ${session.id} ${session.model}`.toLowerCase();
	return query
		.toLowerCase()
		.split(/\s+/)
		.filter(Boolean)
		.every((word) => haystack.includes(word));
}

/** "5 min ago"-style age of a timestamp (ms). */
export function age(at: number | undefined, now = Date.now()): string {
	if (!at) return "";
	const s = Math.max(0, Math.round((now - at) / 1000));
	if (s < 60) return "just now";
	if (s < 3600) return `${Math.floor(s / 60)} min ago`;
	if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
	return new Date(at).toLocaleDateString();
}

/** One entry of the session list: a button that opens it (title, model, messages, age) and one that deletes it. */
export function sessionListItem(
	session: SessionSummary,
	actions: { open(): void; remove(item: HTMLElement): void },
): HTMLElement {
	const item = el("li");
	item.dataset.session = session.id;
	const name = sessionName(session);
	const pick = el("button", "pick");
	pick.type = "button";
	pick.title = session.id;
	const count = `${session.messageCount} message${session.messageCount === 1 ? "" : "s"}`;
	pick.append(
		el("span", "title", name),
		el(
			"span",
			"meta",
			[session.model, count, age(session.lastActiveAt ?? session.createdAt)].filter(Boolean).join(" · "),
		),
	);
	pick.addEventListener("click", () => actions.open());
	const remove = el("button", "secondary", "Delete");
	remove.type = "button";
	remove.setAttribute("aria-label", `Delete session ${session.id} (${name})`);
	remove.addEventListener("click", () => actions.remove(item));
	item.append(pick, remove);
	return item;
}
