/**
 * Checks the `context` of a `POST /api/stream` body before any model is called: the messages and
 * tools a provider's request builder walks must have the shapes of pi-ai's `Context`, or a
 * malformed message would fail deep inside a provider with a message that names nothing. Each
 * problem is a 400 `VALIDATION_FAILED` naming the field (`body.context.messages[2].content[0].type
 * ...`). Fields beyond the ones checked are passed on as they are (newer clients send more).
 *
 * What every provider refuses is refused here too, as `/v1` refuses it, instead of coming back as
 * the provider's error in the stream: tool and tool call names outside the providers' alphabet,
 * tool parameters that are no object schema, images that are no image or no base64.
 */
import type { Context } from "../../../ai/types.js";
import { TOOL_NAME_PATTERN } from "../../../tools/config.js";
import { apiError } from "../../http/errors.js";

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fail(field: string, problem: string): never {
	throw apiError("VALIDATION_FAILED", `${field} ${problem}`);
}

function requireString(value: Fields, key: string, field: string): void {
	if (typeof value[key] !== "string") fail(`${field}.${key}`, "must be a string");
}

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);
const IMAGE_MIME_TYPE = /^image\/[a-z0-9.+-]+$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function requireToolName(value: Fields, field: string): void {
	requireString(value, "name", field);
	if (!TOOL_NAME.test(value.name as string)) fail(`${field}.name`, `must match pattern "${TOOL_NAME_PATTERN}"`);
}

/** A text or image block (user messages, tool results). */
function checkUserBlock(block: unknown, field: string): void {
	if (!isObject(block)) fail(field, "must be an object");
	if (block.type === "text") requireString(block, "text", field);
	else if (block.type === "image") {
		requireString(block, "data", field);
		requireString(block, "mimeType", field);
		if (!IMAGE_MIME_TYPE.test(block.mimeType as string))
			fail(`${field}.mimeType`, 'must be an image media type such as "image/png"');
		const data = block.data as string;
		if (data === "" || data.length % 4 === 1 || !BASE64.test(data)) fail(`${field}.data`, "must be base64 data");
	} else fail(`${field}.type`, 'must be "text" or "image"');
}

function checkAssistantBlock(block: unknown, field: string): void {
	if (!isObject(block)) fail(field, "must be an object");
	switch (block.type) {
		case "text":
			requireString(block, "text", field);
			return;
		case "thinking":
			requireString(block, "thinking", field);
			return;
		case "toolCall":
			requireString(block, "id", field);
			requireToolName(block, field);
			if (!isObject(block.arguments)) fail(`${field}.arguments`, "must be an object");
			return;
		default:
			fail(`${field}.type`, 'must be "text", "thinking" or "toolCall"');
	}
}

function checkBlocks(content: unknown, field: string, check: (block: unknown, field: string) => void): void {
	if (!Array.isArray(content)) fail(field, "must be an array");
	for (const [index, block] of content.entries()) check(block, `${field}[${index}]`);
}

function checkMessage(message: unknown, field: string): void {
	if (!isObject(message)) fail(field, "must be an object");
	switch (message.role) {
		case "user":
			if (typeof message.content !== "string") checkBlocks(message.content, `${field}.content`, checkUserBlock);
			return;
		case "assistant":
			checkBlocks(message.content, `${field}.content`, checkAssistantBlock);
			return;
		case "toolResult":
			requireString(message, "toolCallId", field);
			requireString(message, "toolName", field);
			checkBlocks(message.content, `${field}.content`, checkUserBlock);
			if (typeof message.isError !== "boolean") fail(`${field}.isError`, "must be a boolean");
			return;
		default:
			fail(`${field}.role`, 'must be "user", "assistant" or "toolResult"');
	}
}

function checkTool(tool: unknown, field: string): void {
	if (!isObject(tool)) fail(field, "must be an object");
	requireToolName(tool, field);
	requireString(tool, "description", field);
	if (!isObject(tool.parameters) || tool.parameters.type !== "object")
		fail(`${field}.parameters`, 'must be a JSON Schema with "type": "object"');
}

/** The body's `context` as a `Context`; throws `VALIDATION_FAILED` naming the first field at fault. */
export function checkContext(context: unknown): Context {
	const field = "body.context";
	if (!isObject(context)) fail(field, "must be an object");
	if (context.systemPrompt !== undefined && typeof context.systemPrompt !== "string") {
		fail(`${field}.systemPrompt`, "must be a string");
	}
	if (!Array.isArray(context.messages)) fail(`${field}.messages`, "must be an array");
	for (const [index, message] of context.messages.entries()) checkMessage(message, `${field}.messages[${index}]`);
	if (context.tools !== undefined) {
		if (!Array.isArray(context.tools)) fail(`${field}.tools`, "must be an array");
		for (const [index, tool] of context.tools.entries()) checkTool(tool, `${field}.tools[${index}]`);
	}
	return context as unknown as Context;
}
