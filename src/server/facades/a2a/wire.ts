/**
 * The A2A v1.0 wire shapes the facade reads and writes (the JSON form of the protocol's messages,
 * as `@a2a-js/sdk` 1.x sends and parses them), and the conversions between A2A parts and
 * Wheelhouse message content. Enum values are the JSON names (`TASK_STATE_COMPLETED`,
 * `ROLE_USER`); a part is one of `text`, `data`, `raw` (base64) or `url`.
 */
import type { ImageContent, TextContent } from "../../../ai/types.js";

/** The protocol version this facade speaks (the `A2A-Version` header, the card's interface). */
export const A2A_VERSION = "1.0";

/**
 * The extension that carries Wheelhouse's event id: every streamed response has it in
 * `metadata.wheelhouse.eventId`, and `SubscribeToTask` with a `Last-Event-ID` header resumes
 * after that event.
 */
export const EVENT_ID_EXTENSION = "urn:wheelhouse:a2a:event-id:v1";

export type TaskState =
	| "TASK_STATE_SUBMITTED"
	| "TASK_STATE_WORKING"
	| "TASK_STATE_COMPLETED"
	| "TASK_STATE_FAILED"
	| "TASK_STATE_CANCELED"
	| "TASK_STATE_INPUT_REQUIRED"
	| "TASK_STATE_REJECTED";

/** States after which a task never changes again. */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([
	"TASK_STATE_COMPLETED",
	"TASK_STATE_FAILED",
	"TASK_STATE_CANCELED",
	"TASK_STATE_REJECTED",
]);

export interface Part {
	text?: string;
	data?: unknown;
	raw?: string;
	url?: string;
	mediaType?: string;
	filename?: string;
	metadata?: Record<string, unknown>;
}

export interface Message {
	messageId: string;
	contextId?: string;
	taskId?: string;
	role: "ROLE_USER" | "ROLE_AGENT";
	parts: Part[];
	metadata?: Record<string, unknown>;
}

export interface TaskStatus {
	state: TaskState;
	message?: Message;
	timestamp?: string;
}

export interface Artifact {
	artifactId: string;
	name?: string;
	parts: Part[];
}

export interface Task {
	id: string;
	contextId: string;
	status: TaskStatus;
	artifacts?: Artifact[];
	history?: Message[];
	metadata?: Record<string, unknown>;
}

export interface StatusUpdate {
	taskId: string;
	contextId: string;
	status: TaskStatus;
	metadata?: Record<string, unknown>;
}

export interface ArtifactUpdate {
	taskId: string;
	contextId: string;
	artifact: Artifact;
	append?: boolean;
	lastChunk?: boolean;
	metadata?: Record<string, unknown>;
}

/** One event of a stream (`StreamResponse`: exactly one field set). */
export type StreamResponse = { task: Task } | { statusUpdate: StatusUpdate } | { artifactUpdate: ArtifactUpdate };

/** The id of the one artifact of a task: the text of the run's assistant messages. */
export const ANSWER_ARTIFACT = "answer";

/** What separates the text of two assistant messages in the answer artifact. */
export const MESSAGE_SEPARATOR = "\n\n";

/** JSON-RPC and A2A error codes (the spec's table; the SDK maps each to an error class). */
export const RPC_ERRORS = {
	PARSE_ERROR: -32700,
	INVALID_REQUEST: -32600,
	METHOD_NOT_FOUND: -32601,
	INVALID_PARAMS: -32602,
	INTERNAL_ERROR: -32603,
	TASK_NOT_FOUND: -32001,
	TASK_NOT_CANCELABLE: -32002,
	PUSH_NOTIFICATION_NOT_SUPPORTED: -32003,
	UNSUPPORTED_OPERATION: -32004,
	CONTENT_TYPE_NOT_SUPPORTED: -32005,
	EXTENDED_CARD_NOT_CONFIGURED: -32007,
	VERSION_NOT_SUPPORTED: -32009,
} as const;

/** A JSON-RPC error to answer with: thrown by the method handlers, turned into the error object by the route. */
export class RpcError extends Error {
	constructor(
		readonly code: number,
		message: string,
		readonly data?: unknown,
	) {
		super(message);
		this.name = "RpcError";
	}
}

export function invalidParams(field: string, problem: string): RpcError {
	return new RpcError(RPC_ERRORS.INVALID_PARAMS, `params.${field}: ${problem}`);
}

const IMAGE_TYPE = /^image\/[a-z0-9.+-]+$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * A user message's parts as Wheelhouse content: text as is, data parts as their JSON text, raw
 * images inline. URLs are refused (the server fetches nothing), and so are files of other types.
 */
export function contentOfParts(parts: readonly Part[], field: string): (TextContent | ImageContent)[] {
	return parts.map((part, i): TextContent | ImageContent => {
		const where = `${field}[${i}]`;
		if (typeof part.text === "string") return { type: "text", text: part.text };
		if (part.data !== undefined) return { type: "text", text: JSON.stringify(part.data) };
		if (typeof part.raw === "string") {
			const mime = part.mediaType ?? "";
			if (!IMAGE_TYPE.test(mime)) {
				throw new RpcError(
					RPC_ERRORS.CONTENT_TYPE_NOT_SUPPORTED,
					`${where}.mediaType: only images are taken as raw parts (got ${JSON.stringify(mime)})`,
				);
			}
			if (part.raw.length === 0 || part.raw.length % 4 === 1 || !BASE64.test(part.raw)) {
				throw invalidParams(`${where}.raw`, "must be base64 data");
			}
			return { type: "image", data: part.raw, mimeType: mime };
		}
		if (typeof part.url === "string") {
			throw new RpcError(
				RPC_ERRORS.CONTENT_TYPE_NOT_SUPPORTED,
				`${where}.url: the server fetches no URLs; send the content inline (text, data or raw)`,
			);
		}
		throw invalidParams(where, "a part needs one of text, data, raw or url");
	});
}

/** Wheelhouse content as A2A parts (text and inline images). */
export function partsOfContent(
	content: string | readonly { type: string; text?: string; data?: string; mimeType?: string }[],
): Part[] {
	if (typeof content === "string") return [{ text: content }];
	const parts: Part[] = [];
	for (const block of content) {
		if (block.type === "text" && typeof block.text === "string") parts.push({ text: block.text });
		else if (block.type === "image" && block.data) parts.push({ raw: block.data, mediaType: block.mimeType ?? "" });
	}
	return parts;
}

/** An ISO timestamp, as A2A statuses carry them. */
export function timestamp(at: number = Date.now()): string {
	return new Date(at).toISOString();
}
