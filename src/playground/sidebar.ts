/**
 * The left column: the model and tool pickers filled from the catalog, the body of a new session
 * read from the form, and one entry of the session list. DOM only; requests are the caller's.
 */
import type { PageElements } from "./page.js";
import { el } from "./render.js";

type CatalogModel = { id: string; name?: string; available?: boolean; standIn?: boolean };
type CatalogTool = { name: string; description?: string };

/** Fills the model picker (`GET /v1/models`): stand-ins and models without a key are marked, the latter disabled. */
export function fillModels(select: HTMLSelectElement, models: CatalogModel[], defaultModel: string | undefined): void {
	select.replaceChildren();
	for (const m of models) {
		const label = `${m.id}${m.standIn ? " (stand-in)" : ""}${m.available === false ? " (no key)" : ""}`;
		const option = new Option(label, m.id, m.id === defaultModel, m.id === defaultModel);
		option.disabled = m.available === false;
		select.append(option);
	}
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

/** One entry of the session list: a button that opens it and one that deletes it. */
export function sessionListItem(
	session: { id: string; model: string; status: string; messageCount: number },
	actions: { open(): void; remove(item: HTMLElement): void },
): HTMLElement {
	const item = el("li");
	item.dataset.session = session.id;
	const pick = el("button", "pick", `${session.id.slice(0, 12)} · ${session.model} · ${session.messageCount} msgs`);
	pick.type = "button";
	pick.title = session.id;
	pick.setAttribute("aria-label", `Open session ${session.id} (${session.model}, ${session.status})`);
	pick.addEventListener("click", () => actions.open());
	const remove = el("button", "secondary", "Delete");
	remove.type = "button";
	remove.setAttribute("aria-label", `Delete session ${session.id}`);
	remove.addEventListener("click", () => actions.remove(item));
	item.append(pick, remove);
	return item;
}
