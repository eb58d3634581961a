/**
 * Request mapping of the OpenAI facade: Chat Completions messages and Responses input items into
 * Wheelhouse messages, and function tools into client tool declarations. Throws
 * `VALIDATION_FAILED` naming the field for what cannot be mapped.
 */
import type { AgentMessage } from "../../../agent/types.js";
import { createAssistantMessage } from "../../../ai/assistant-message.js";
import type {
	AssistantMessage,
	ImageContent,
	Model,
	TextContent,
	ToolCall,
	ToolResultMessage,
	UserMessage,
} from "../../../ai/types.js";
import { TOOL_NAME_PATTERN } from "../../../tools/config.js";
import type { ClientToolSpec } from "../../../tools/index.js";
import { invalidField as invalid, quote } from "../../http/errors.js";
import { textOf } from "../text.js";

/** A conversation as a session starts from it: the system prompt, the history, and what runs next. */
export interface MappedConversation {
	systemPrompt: string | undefined;
	/** Messages before the last user turn (or all of them, when the conversation ends with tool results). */
	history: AgentMessage[];
	/** The trailing user message(s) to prompt with; empty when the conversation ends with tool results (continue). */
	prompt: AgentMessage[];
	/** Tool results at the end of the conversation (results of the model's client tool calls). */
	toolResults: ToolResultMessage[];
}

type Json = Record<string, any>;

/** What `/v1` accepts as an image's MIME type. */
const IMAGE_MIME = /^image\/[a-z0-9.+-]+$/;
/** Standard base64, padded. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);

/** A tool call in the history names a function as a declaration does: a provider refuses anything else. */
function checkCallName(name: string, field: string): void {
	if (!TOOL_NAME.test(name)) {
		invalid(field, `${quote(name)} is not a function name: 1 to 64 letters, digits, underscores or dashes`);
	}
}

/** An image part's URL as an image block, or a 400 naming `field`. */
function imageBlock(url: unknown, field: string): ImageContent {
	const match = typeof url === "string" ? /^data:([^;,]+);base64,(.*)$/s.exec(url) : null;
	if (!match) invalid(field, "images must be data URLs (data:<mime>;base64,...): the server fetches no URLs");
	const [, mimeType = "", data = ""] = match;
	if (!IMAGE_MIME.test(mimeType))
		invalid(field, `${quote(mimeType)} is not an image MIME type (image/png, image/jpeg, ...)`);
	if (data === "" || !BASE64.test(data)) invalid(field, "the data after base64, is not valid base64");
	return { type: "image", mimeType, data };
}

/** Text and image parts (`text` / `input_text` / `output_text`, `image_url` / `input_image` with data URLs). */
function contentBlocks(content: unknown, field: string): (TextContent | ImageContent)[] {
	if (typeof content === "string") return [{ type: "text", text: content }];
	if (content === null || content === undefined) return [];
	if (!Array.isArray(content)) invalid(field, "must be a string or an array of content parts");
	return content.map((part: Json, i) => {
		const where = `${field}[${i}]`;
		switch (part?.type) {
			case "text":
			case "input_text":
			case "output_text":
				if (typeof part.text !== "string") invalid(`${where}.text`, "must be a string");
				return { type: "text", text: part.text };
			case "image_url":
				return imageBlock(
					typeof part.image_url === "string" ? part.image_url : part.image_url?.url,
					typeof part.image_url === "string" ? `${where}.image_url` : `${where}.image_url.url`,
				);
			case "input_image":
				return imageBlock(part.image_url, `${where}.image_url`);
			default:
				return invalid(`${where}.type`, `${quote(part?.type)} is not supported (text and images are)`);
		}
	});
}

function textOnly(content: unknown, field: string): string {
	return textOf(contentBlocks(content, field));
}

function parseArguments(raw: unknown, field: string): Record<string, any> {
	if (raw && typeof raw === "object") return raw as Record<string, any>;
	if (typeof raw !== "string" || raw.trim() === "") return {};
	try {
		const parsed = JSON.parse(raw);
		if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed;
	} catch {
		// reported below
	}
	return invalid(field, "must be a JSON object in a string");
}

function assistantMessage(model: Model<any>, content: AssistantMessage["content"]): AssistantMessage {
	return {
		...createAssistantMessage(model),
		content,
		stopReason: content.some((block) => block.type === "toolCall") ? "toolUse" : "stop",
	};
}

/** Splits mapped messages into history, the trailing prompt and the trailing tool results. */
function split(systemPrompt: string | undefined, messages: AgentMessage[], field: string): MappedConversation {
	let end = messages.length;
	while (end > 0 && (messages[end - 1] as { role: string }).role === "toolResult") end--;
	const toolResults = messages.slice(end) as ToolResultMessage[];
	if (toolResults.length > 0) return { systemPrompt, history: messages, prompt: [], toolResults };
	let start = end;
	while (start > 0 && (messages[start - 1] as { role: string }).role === "user") start--;
	if (start === end) invalid(field, "must end with a user message or with tool results");
	return { systemPrompt, history: messages.slice(0, start), prompt: messages.slice(start), toolResults: [] };
}

/** Chat Completions `messages` → a conversation. */
export function mapChatMessages(messages: Json[], model: Model<any>): MappedConversation {
	const system: string[] = [];
	const out: AgentMessage[] = [];
	const toolNames = new Map<string, string>();
	messages.forEach((message, i) => {
		const field = `body.messages[${i}]`;
		switch (message?.role) {
			case "system":
			case "developer":
				system.push(textOnly(message.content, `${field}.content`));
				break;
			case "user":
				out.push({
					role: "user",
					content: contentBlocks(message.content, `${field}.content`),
					timestamp: Date.now(),
				} satisfies UserMessage);
				break;
			case "assistant": {
				const content: AssistantMessage["content"] = contentBlocks(message.content, `${field}.content`).filter(
					(block): block is TextContent => block.type === "text",
				);
				for (const [j, call] of ((message.tool_calls ?? []) as Json[]).entries()) {
					const name = call?.function?.name;
					if (typeof call?.id !== "string" || typeof name !== "string")
						invalid(`${field}.tool_calls[${j}]`, "needs an id and function.name");
					checkCallName(name, `${field}.tool_calls[${j}].function.name`);
					toolNames.set(call.id, name);
					content.push({
						type: "toolCall",
						id: call.id,
						name,
						arguments: parseArguments(call.function.arguments, `${field}.tool_calls[${j}].function.arguments`),
					} satisfies ToolCall);
				}
				out.push(assistantMessage(model, content));
				break;
			}
			case "tool": {
				const id = message.tool_call_id;
				if (typeof id !== "string") invalid(`${field}.tool_call_id`, "must be a string");
				const toolName = toolNames.get(id);
				if (!toolName)
					invalid(`${field}.tool_call_id`, `${quote(id)} answers no tool call of an earlier assistant message`);
				out.push(toolResult(id, toolName, contentBlocks(message.content, `${field}.content`)));
				break;
			}
			default:
				invalid(`${field}.role`, `${quote(message?.role)} is not one of system, developer, user, assistant, tool`);
		}
	});
	return split(system.length > 0 ? system.join("\n\n") : undefined, out, "body.messages");
}

function toolResult(toolCallId: string, toolName: string, content: (TextContent | ImageContent)[]): ToolResultMessage {
	return { role: "toolResult", toolCallId, toolName, content, isError: false, timestamp: Date.now() };
}

/**
 * Responses `input` → a conversation. `knownCalls` names the tool calls of the session the input
 * continues (by call id), so a `function_call_output` may answer a call made in an earlier response.
 */
export function mapResponsesInput(
	input: unknown,
	instructions: string | undefined,
	model: Model<any>,
	knownCalls: ReadonlyMap<string, string> = new Map(),
): MappedConversation {
	const items: Json[] = typeof input === "string" ? [{ role: "user", content: input }] : (input as Json[]);
	if (!Array.isArray(items) || items.length === 0) invalid("body.input", "must be a string or a non-empty array");
	const system: string[] = instructions ? [instructions] : [];
	const out: AgentMessage[] = [];
	const toolNames = new Map(knownCalls);
	items.forEach((item, i) => {
		const field = `body.input[${i}]`;
		const type = item?.type ?? "message";
		if (type === "function_call") {
			if (typeof item.call_id !== "string" || typeof item.name !== "string")
				invalid(field, "a function_call needs call_id and name");
			checkCallName(item.name, `${field}.name`);
			toolNames.set(item.call_id, item.name);
			const call: ToolCall = {
				type: "toolCall",
				id: item.call_id,
				name: item.name,
				arguments: parseArguments(item.arguments, `${field}.arguments`),
			};
			const previous = out[out.length - 1] as AssistantMessage | undefined;
			if (previous?.role === "assistant") {
				previous.content.push(call);
				previous.stopReason = "toolUse";
			} else out.push(assistantMessage(model, [call]));
			return;
		}
		if (type === "function_call_output") {
			const name = toolNames.get(item.call_id);
			if (!name) invalid(`${field}.call_id`, `${quote(item.call_id)} answers no function call of this conversation`);
			const output = typeof item.output === "string" ? item.output : contentBlocks(item.output, `${field}.output`);
			out.push(toolResult(item.call_id, name, typeof output === "string" ? [{ type: "text", text: output }] : output));
			return;
		}
		// A server tool call an earlier answer showed (x-wheelhouse-server-tools): shown, not input.
		if (type === "mcp_call") return;
		if (type !== "message")
			invalid(
				`${field}.type`,
				`${quote(type)} is not supported (message, function_call, function_call_output, item_reference are)`,
			);
		switch (item.role) {
			case "system":
			case "developer":
				system.push(textOnly(item.content, `${field}.content`));
				break;
			case "user":
				out.push({ role: "user", content: contentBlocks(item.content, `${field}.content`), timestamp: Date.now() });
				break;
			case "assistant": {
				const content = contentBlocks(item.content, `${field}.content`).filter(
					(block): block is TextContent => block.type === "text",
				);
				out.push(assistantMessage(model, content));
				break;
			}
			default:
				invalid(`${field}.role`, `${quote(item.role)} is not one of system, developer, user, assistant`);
		}
	});
	return split(system.length > 0 ? system.join("\n\n") : undefined, out, "body.input");
}

/**
 * Function tools of either API (`{type: "function", function: {...}}` in Chat Completions,
 * `{type: "function", name, ...}` in Responses) as client tool declarations.
 */
export function mapFunctionTools(tools: unknown, field: string): ClientToolSpec[] {
	if (tools === undefined || tools === null) return [];
	if (!Array.isArray(tools)) invalid(field, "must be an array");
	const seen = new Set<string>();
	return tools.map((tool: Json, i) => {
		if (tool?.type !== "function") invalid(`${field}[${i}].type`, `only "function" tools are supported`);
		// Chat Completions nests the function; Responses flattens it.
		const nested = tool.function !== undefined;
		const fn = nested ? tool.function : tool;
		const where = nested ? `${field}[${i}].function` : `${field}[${i}]`;
		if (fn === null || typeof fn !== "object") invalid(where, "must be an object with the function's name");
		if (typeof fn.name !== "string" || !TOOL_NAME.test(fn.name)) {
			invalid(
				`${where}.name`,
				`${quote(fn.name)} is not a function name: 1 to 64 letters, digits, underscores or dashes`,
			);
		}
		if (seen.has(fn.name)) invalid(`${where}.name`, `${quote(fn.name)} is declared twice`);
		seen.add(fn.name);
		const parameters = fn.parameters;
		if (parameters !== undefined && parameters !== null) {
			if (typeof parameters !== "object" || Array.isArray(parameters))
				invalid(`${where}.parameters`, "must be a JSON Schema object");
			// `{}` (no arguments) is what some clients send for a tool without parameters.
			if (Object.keys(parameters).length > 0 && parameters.type !== "object")
				invalid(`${where}.parameters`, 'must be a JSON Schema with "type": "object"');
		}
		return {
			name: fn.name,
			description: typeof fn.description === "string" ? fn.description : "",
			...(parameters && Object.keys(parameters).length > 0 ? { parameters } : {}),
		};
	});
}
