/**
 * Request mapping of the AG-UI facade: a `RunAgentInput`'s messages, tools, context and state as
 * a session sees them. Throws `VALIDATION_FAILED` naming the field for what cannot be mapped.
 *
 * An AG-UI client sends the whole conversation on every run; the session already holds all but
 * the newest part. That part, the *tail*, is what follows the last message the model produced
 * (an assistant or reasoning message): the user's new messages, and the results of the client
 * tools the model called. The messages before it only matter when the thread's session is new:
 * they become its transcript.
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
import { type ClientToolSpec, validateClientToolSpecs } from "../../../tools/index.js";
import { apiError, invalidField as invalid } from "../../http/errors.js";
import { textOf } from "../text.js";

/** A message of `RunAgentInput.messages` (the schema checked `id` and `role`). */
export interface InputMessage {
	id: string;
	role: string;
	content?: unknown;
	toolCalls?: unknown;
	toolCallId?: unknown;
	error?: unknown;
	[key: string]: unknown;
}

/** The newest part of the conversation, with the client's message ids. */
export interface Tail {
	/** Where the tail starts in `RunAgentInput.messages`. */
	start: number;
	prompt: { id: string; message: UserMessage }[];
	toolResults: { id: string; message: ToolResultMessage }[];
}

type Json = Record<string, any>;

/** Roles that end the tail: what the model produced. */
const MODEL_ROLES = new Set(["assistant", "reasoning"]);

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);
/** What `/v1` accepts as an image's media type. */
const IMAGE_MIME_TYPE = /^image\/[a-z0-9.+-]+$/;
/** Base64 (standard alphabet, padded or not); a provider refuses anything else as a whole request. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** An inline image, checked as a provider would check it (a bad one fails the model call, not the request). */
function inlineImage(data: string, mimeType: string, where: string): ImageContent {
	if (!IMAGE_MIME_TYPE.test(mimeType)) invalid(`${where}.mimeType`, 'must be an image media type such as "image/png"');
	if (data.length === 0 || data.length % 4 === 1 || !BASE64.test(data))
		invalid(`${where}.value`, "must be base64 data");
	return { type: "image", data, mimeType };
}

/** Text and inline images; other parts (audio, video, documents, URLs) are refused. */
function contentBlocks(content: unknown, field: string): (TextContent | ImageContent)[] {
	if (typeof content === "string") return [{ type: "text", text: content }];
	if (content === undefined || content === null) return [];
	if (!Array.isArray(content)) invalid(field, "must be a string or an array of content parts");
	return content.map((part: Json, i): TextContent | ImageContent => {
		const where = `${field}[${i}]`;
		if (part?.type === "text") {
			if (typeof part.text !== "string") invalid(`${where}.text`, "must be a string");
			return { type: "text", text: part.text };
		}
		if (part?.type === "image") {
			const source = part.source as Json | undefined;
			if (source?.type === "data" && typeof source.value === "string" && typeof source.mimeType === "string") {
				return inlineImage(source.value, source.mimeType, `${where}.source`);
			}
			const url = source?.type === "url" && typeof source.value === "string" ? source.value : "";
			const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
			if (match) return inlineImage(match[2] as string, match[1] as string, `${where}.source`);
			return invalid(
				`${where}.source`,
				'images must be inline ({ type: "data", value, mimeType } or a data: URL): the server fetches no URLs',
			);
		}
		return invalid(`${where}.type`, `"${part?.type}" is not supported (text and images are)`);
	});
}

function textOnly(content: unknown, field: string): string {
	return textOf(contentBlocks(content, field));
}

/** Tool call ids of the input's assistant messages, with their tool names. */
function callsOfInput(messages: readonly InputMessage[]): Map<string, string> {
	const calls = new Map<string, string>();
	for (const message of messages) {
		if (message.role !== "assistant" || !Array.isArray(message.toolCalls)) continue;
		for (const call of message.toolCalls as Json[]) {
			if (typeof call?.id === "string" && typeof call?.function?.name === "string")
				calls.set(call.id, call.function.name);
		}
	}
	return calls;
}

function userMessage(message: InputMessage, field: string): UserMessage {
	return { role: "user", content: contentBlocks(message.content, `${field}.content`), timestamp: Date.now() };
}

function toolResult(message: InputMessage, field: string, toolNames: ReadonlyMap<string, string>): ToolResultMessage {
	const id = message.toolCallId;
	if (typeof id !== "string") invalid(`${field}.toolCallId`, "must be a string");
	const toolName = toolNames.get(id);
	if (!toolName) invalid(`${field}.toolCallId`, `"${id}" answers no tool call of an assistant message`);
	const error = typeof message.error === "string" ? message.error : undefined;
	const content = contentBlocks(message.content, `${field}.content`);
	if (content.length === 0 && error) content.push({ type: "text", text: error });
	return { role: "toolResult", toolCallId: id, toolName, content, isError: error !== undefined, timestamp: Date.now() };
}

/**
 * The tail of `messages`. `knownCalls` are the tool calls of the session's transcript (a tool
 * message may answer a call made in an earlier run).
 */
export function tailOf(messages: readonly InputMessage[], knownCalls: ReadonlyMap<string, string>): Tail {
	let start = messages.length;
	while (start > 0 && !MODEL_ROLES.has((messages[start - 1] as InputMessage).role)) start--;
	const toolNames = new Map([...knownCalls, ...callsOfInput(messages)]);
	const tail: Tail = { start, prompt: [], toolResults: [] };
	for (let i = start; i < messages.length; i++) {
		const message = messages[i] as InputMessage;
		const field = `body.messages[${i}]`;
		if (message.role === "user") tail.prompt.push({ id: message.id, message: userMessage(message, field) });
		else if (message.role === "tool")
			tail.toolResults.push({ id: message.id, message: toolResult(message, field, toolNames) });
	}
	return tail;
}

/** The text of the system and developer messages (undefined when there are none): the session's system prompt. */
export function systemPromptOf(messages: readonly InputMessage[]): string | undefined {
	const parts: string[] = [];
	messages.forEach((message, i) => {
		if (message.role === "system" || message.role === "developer")
			parts.push(textOnly(message.content, `body.messages[${i}].content`));
	});
	return parts.length > 0 ? parts.join("\n\n") : undefined;
}

function parseArguments(raw: unknown, field: string): Record<string, any> {
	if (typeof raw !== "string" || raw.trim() === "") return {};
	try {
		const parsed = JSON.parse(raw);
		if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed;
	} catch {
		// reported below
	}
	return invalid(field, "must be a JSON object in a string");
}

function assistantMessage(message: InputMessage, field: string, model: Model<any>): AssistantMessage {
	const content: AssistantMessage["content"] = [];
	if (message.content !== undefined && message.content !== null) {
		content.push({ type: "text", text: textOnly(message.content, `${field}.content`) });
	}
	const calls = message.toolCalls;
	if (calls !== undefined && !Array.isArray(calls)) invalid(`${field}.toolCalls`, "must be an array");
	for (const [j, call] of ((calls ?? []) as Json[]).entries()) {
		const name = call?.function?.name;
		if (typeof call?.id !== "string" || typeof name !== "string")
			invalid(`${field}.toolCalls[${j}]`, "needs an id and function.name");
		if (!TOOL_NAME.test(name))
			invalid(`${field}.toolCalls[${j}].function.name`, `must match pattern "${TOOL_NAME_PATTERN}"`);
		content.push({
			type: "toolCall",
			id: call.id,
			name,
			arguments: parseArguments(call.function.arguments, `${field}.toolCalls[${j}].function.arguments`),
		} satisfies ToolCall);
	}
	return {
		...createAssistantMessage(model),
		content,
		stopReason: content.some((block) => block.type === "toolCall") ? "toolUse" : "stop",
	};
}

/**
 * The messages before the tail as a transcript to start a session from (user, assistant and tool
 * messages; reasoning, activity, system and developer messages have no place in it).
 */
export function historyOf(messages: readonly InputMessage[], end: number, model: Model<any>): AgentMessage[] {
	const toolNames = callsOfInput(messages);
	const out: AgentMessage[] = [];
	for (let i = 0; i < end; i++) {
		const message = messages[i] as InputMessage;
		const field = `body.messages[${i}]`;
		if (message.role === "user") out.push(userMessage(message, field));
		else if (message.role === "assistant") out.push(assistantMessage(message, field, model));
		else if (message.role === "tool") out.push(toolResult(message, field, toolNames));
	}
	return out;
}

/**
 * `RunAgentInput.tools` (the schema checked name and description) as client tool declarations,
 * checked as `/v1` checks a session's `clientTools`: unique names, none a server tool's
 * (`serverTools`), parameters an object schema.
 */
export function clientToolsOf(tools: readonly Json[] | undefined, serverTools: Iterable<string>): ClientToolSpec[] {
	const specs = (tools ?? []).map((tool, i) => {
		const parameters = tool.parameters;
		if (
			parameters !== undefined &&
			(typeof parameters !== "object" || parameters === null || Array.isArray(parameters))
		)
			invalid(`body.tools[${i}].parameters`, "must be a JSON Schema object");
		return { name: tool.name, description: tool.description, ...(parameters ? { parameters } : {}) };
	});
	const problem = validateClientToolSpecs(specs, serverTools)[0];
	// The check names `/v1`'s field (`clientTools.0.name: ...`): here it is `body.tools[0].name`.
	if (problem) throw apiError("VALIDATION_FAILED", problem.replace(/^clientTools\.(\d+)\./, "body.tools[$1]."));
	return specs;
}

/**
 * What the run's model calls get besides the session's system prompt: the input's `context`
 * entries and a non-empty `state`. Empty when there is neither.
 */
export function runInstructions(context: readonly { description: string; value: string }[], state: unknown): string {
	const parts: string[] = [];
	if (context.length > 0) {
		parts.push(
			["Context from the application:", ...context.map((entry) => `- ${entry.description}: ${entry.value}`)].join("\n"),
		);
	}
	if (isNonEmptyState(state)) parts.push(`The application's shared state (JSON): ${JSON.stringify(state)}`);
	return parts.join("\n\n");
}

/** A state worth keeping: anything but nothing, `null` and an empty object. */
export function isNonEmptyState(state: unknown): boolean {
	if (state === undefined || state === null) return false;
	if (typeof state === "object" && !Array.isArray(state)) return Object.keys(state).length > 0;
	return true;
}
