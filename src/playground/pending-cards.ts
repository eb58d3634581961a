/**
 * The cards of calls waiting for the user: an approval (approve or deny, with an optional reason
 * the model sees) and a client tool's answer form (the arguments as a form, the result text, an
 * error flag), and an MCP server's question (elicitation: its requested schema as a form, Accept
 * or Decline). They build DOM only; what an answer does is the caller's callback.
 */
import { el } from "./render.js";
import { schemaForm } from "./schema-form.js";

/** A call waiting for an approval or a client tool's result, as the stream and the snapshot carry it. */
export type Pending = { toolCallId: string; toolName: string; args: unknown; orphaned?: boolean };

/** A question an MCP server asks during a tool call, as `elicitation_requested` and the snapshot carry it. */
export type PendingElicitation = {
	elicitationId: string;
	server: string;
	toolCallId: string;
	toolName: string;
	message: string;
	requestedSchema: unknown;
	orphaned?: boolean;
};

/** Removes the cards of `kind` for `toolCallId` (an elicitation's id for `elicitation`) from `container`. */
export function removePendingCards(
	container: HTMLElement,
	toolCallId: string,
	kind: "approval" | "client" | "elicitation",
): void {
	for (const card of container.querySelectorAll<HTMLElement>(`[data-kind="${kind}"]`)) {
		if (card.dataset.toolCallId === toolCallId) card.remove();
	}
}

/**
 * An approval card. `answer(approve, reason)` is called on either button; the card removes itself
 * only when told to (the caller does after the server accepted the answer).
 */
export function approvalCard(
	request: Pending,
	answer: (card: HTMLElement, approve: boolean, reason: string | undefined) => void,
): { card: HTMLElement; focus: HTMLElement } {
	const card = el("div", "approval");
	card.dataset.kind = "approval";
	card.dataset.toolCallId = request.toolCallId;
	card.setAttribute("role", "group");
	const heading = el("h3", undefined, `Approve the call to ${request.toolName}?`);
	heading.id = `approval-${request.toolCallId}`;
	card.setAttribute("aria-labelledby", heading.id);
	const reasonId = `reason-${request.toolCallId}`;
	const reasonLabel = el("label", undefined, "Reason (optional, the model sees it)");
	reasonLabel.htmlFor = reasonId;
	const reason = el("input");
	reason.type = "text";
	reason.id = reasonId;
	const approve = el("button", undefined, "Approve");
	approve.type = "button";
	const deny = el("button", "secondary", "Deny");
	deny.type = "button";
	const respond = (ok: boolean) => answer(card, ok, reason.value.trim() || undefined);
	approve.addEventListener("click", () => respond(true));
	deny.addEventListener("click", () => respond(false));
	const buttons = el("div", "buttons");
	buttons.append(approve, deny);
	card.append(heading, el("pre", undefined, JSON.stringify(request.args, null, 2)), reasonLabel, reason, buttons);
	return { card, focus: approve };
}

/** What a client tool's form sends as the result of the call. */
export interface ClientToolAnswer {
	content: string;
	isError: boolean;
	details: { arguments: unknown };
}

/**
 * A client tool's answer form: the arguments the model sent, edited through a form built from the
 * tool's JSON Schema (`schema`), the result text and an error flag. `submit` gets the answer.
 */
export function clientToolForm(
	call: Pending,
	schema: unknown,
	submit: (form: HTMLElement, answer: ClientToolAnswer) => void,
): HTMLElement {
	const form = el("form", "client-tool");
	form.dataset.kind = "client";
	form.dataset.toolCallId = call.toolCallId;
	const heading = el("h3", undefined, `Client tool ${call.toolName}: your answer`);
	heading.id = `client-${call.toolCallId}`;
	form.setAttribute("aria-labelledby", heading.id);
	const fields = schemaForm(schema, (call.args ?? {}) as Record<string, unknown>);
	const argsBox = el("fieldset");
	argsBox.append(el("legend", undefined, "Arguments the model sent"), fields.element);
	const resultId = `result-${call.toolCallId}`;
	const resultLabel = el("label", undefined, "Result (what the model sees)");
	resultLabel.htmlFor = resultId;
	const result = el("textarea");
	result.id = resultId;
	result.rows = 2;
	result.required = true;
	const errorRow = el("div", "tool-row");
	const isError = el("input");
	isError.type = "checkbox";
	isError.id = `error-${call.toolCallId}`;
	const errorLabel = el("label", undefined, "Report as an error");
	errorLabel.htmlFor = isError.id;
	errorRow.append(isError, errorLabel);
	const submitButton = el("button", undefined, "Send result");
	submitButton.type = "submit";
	form.append(heading, argsBox, resultLabel, result, errorRow, submitButton);
	form.addEventListener("submit", (event) => {
		event.preventDefault();
		submit(form, { content: result.value, isError: isError.checked, details: { arguments: fields.read() } });
	});
	return form;
}

/** What an elicitation card sends: accepted content, or a decline. */
export type ElicitationReply = { action: "accept"; content: Record<string, unknown> } | { action: "decline" };

type FieldSchema = { type?: string; title?: string; enum?: unknown[]; oneOf?: { const?: unknown }[] };

/**
 * An elicitation card: the server's message, a form of the requested schema's fields (titled
 * `oneOf` enums shown as a select of their values), Accept and Decline. Optional fields left empty
 * are not sent. `answer` gets the reply; the caller removes the card once the server took it.
 */
export function elicitationCard(
	request: PendingElicitation,
	answer: (card: HTMLElement, reply: ElicitationReply) => void,
): HTMLElement {
	const form = el("form", "elicitation");
	form.dataset.kind = "elicitation";
	form.dataset.toolCallId = request.elicitationId;
	const heading = el("h3", undefined, `${request.server} asks (during ${request.toolName})`);
	heading.id = `elicitation-${request.elicitationId}`;
	form.setAttribute("aria-labelledby", heading.id);
	const schema = (request.requestedSchema ?? {}) as { properties?: Record<string, FieldSchema>; required?: string[] };
	const properties: Record<string, FieldSchema> = {};
	for (const [name, field] of Object.entries(schema.properties ?? {})) {
		properties[name] =
			!field.enum && Array.isArray(field.oneOf) ? { ...field, enum: field.oneOf.map((option) => option.const) } : field;
	}
	const required = new Set(schema.required ?? []);
	const fields = schemaForm({ type: "object", properties }, {});
	const accept = el("button", undefined, "Accept");
	accept.type = "submit";
	const decline = el("button", "secondary", "Decline");
	decline.type = "button";
	decline.addEventListener("click", () => answer(form, { action: "decline" }));
	const buttons = el("div", "buttons");
	buttons.append(accept, decline);
	form.append(heading, el("p", undefined, request.message), fields.element, buttons);
	form.addEventListener("submit", (event) => {
		event.preventDefault();
		const content = fields.read();
		for (const [name, value] of Object.entries(content)) if (value === "" && !required.has(name)) delete content[name];
		answer(form, { action: "accept", content });
	});
	return form;
}
