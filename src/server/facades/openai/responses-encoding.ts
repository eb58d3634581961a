/**
 * Responses API encoding: the `response` object, and the semantic stream events of one response
 * (`response.created`, `response.output_item.added`, `response.output_text.delta`, ...,
 * `response.completed` / `response.failed` / `response.incomplete`), each with its
 * `sequence_number`, in the order the SDK's accumulator applies them.
 */
import { randomBytes } from "node:crypto";
import type { ToolCall, Usage } from "../../../ai/types.js";
import { formatFrame } from "../../../wire/sse-frames.js";
import type { SegmentEnd, ServerToolCall } from "./run-segment.js";

export type ResponseStatus = "queued" | "in_progress" | "completed" | "failed" | "cancelled" | "incomplete";

interface OutputText {
	type: "output_text";
	text: string;
	annotations: never[];
	logprobs: never[];
}

interface MessageItem {
	type: "message";
	id: string;
	status: "in_progress" | "completed";
	role: "assistant";
	content: OutputText[];
}

interface FunctionCallItem {
	type: "function_call";
	id: string;
	call_id: string;
	name: string;
	arguments: string;
	status: "completed";
}

/** A server tool that ran, in the shape of the API's own server-side tool calls (`mcp_call`). */
interface ServerToolItem {
	type: "mcp_call";
	id: string;
	server_label: "wheelhouse";
	name: string;
	arguments: string;
	output: string | null;
	error: string | null;
	status: "completed" | "failed";
}

export type OutputItem = MessageItem | FunctionCallItem | ServerToolItem;

/** The fields of a response the request decides. */
export interface ResponseHead {
	id: string;
	model: string;
	createdAt: number;
	previousResponseId: string | null;
	instructions: string | null;
	tools: unknown[];
	metadata: Record<string, string>;
}

/** A response object as `POST /responses` and `GET /responses/{id}` return it. */
export interface ResponseObject {
	id: string;
	object: "response";
	created_at: number;
	status: ResponseStatus;
	model: string;
	output: OutputItem[];
	usage: ReturnType<typeof responseUsage> | null;
	error: { code: string; message: string } | null;
	incomplete_details: { reason: string } | null;
	previous_response_id: string | null;
	instructions: string | null;
	tools: unknown[];
	tool_choice: "auto";
	parallel_tool_calls: boolean;
	metadata: Record<string, string>;
	temperature: null;
	top_p: null;
	text: { format: { type: "text" } };
	[extra: string]: unknown;
}

function itemId(prefix: string): string {
	return `${prefix}_${randomBytes(12).toString("hex")}`;
}

export function responseUsage(usage: Usage) {
	const input = usage.input + usage.cacheRead + usage.cacheWrite;
	return {
		input_tokens: input,
		input_tokens_details: { cached_tokens: usage.cacheRead },
		output_tokens: usage.output,
		output_tokens_details: { reasoning_tokens: 0 },
		total_tokens: input + usage.output,
	};
}

export function responseObject(
	head: ResponseHead,
	status: ResponseStatus,
	output: OutputItem[],
	usage?: Usage,
	error?: { code: string; message: string },
): ResponseObject {
	return {
		id: head.id,
		object: "response",
		created_at: head.createdAt,
		status,
		model: head.model,
		output,
		usage: usage ? responseUsage(usage) : null,
		error: error ?? null,
		incomplete_details: status === "incomplete" ? { reason: "interrupted" } : null,
		previous_response_id: head.previousResponseId,
		instructions: head.instructions,
		tools: head.tools,
		tool_choice: "auto",
		parallel_tool_calls: true,
		metadata: head.metadata,
		temperature: null,
		top_p: null,
		text: { format: { type: "text" } },
	};
}

/** The status a response ends with, and its error. */
export function endStatus(end: SegmentEnd): { status: ResponseStatus; error?: { code: string; message: string } } {
	switch (end.kind) {
		case "stop":
			return end.reason === "length" ? { status: "incomplete" } : { status: "completed" };
		case "tool_calls":
			return { status: "completed" };
		case "aborted":
			return { status: "cancelled" };
		case "error":
			return { status: "failed", error: { code: "server_error", message: end.message } };
	}
}

export function functionCallItem(call: ToolCall): FunctionCallItem {
	return {
		type: "function_call",
		id: itemId("fc"),
		call_id: call.id,
		name: call.name,
		arguments: JSON.stringify(call.arguments),
		status: "completed",
	};
}

/** The events that may come before `response.in_progress`. */
const OPENING = new Set(["response.created", "response.queued", "response.in_progress", "error"]);

/**
 * Builds a response's output as a stretch happens, and (when streaming) its events. Without a
 * `write`, it only collects the output (the non-streaming answer).
 */
export class ResponseBuilder {
	readonly output: OutputItem[] = [];
	private sequence = 0;
	private message: MessageItem | undefined;
	/** What the stream said so far: nothing, `response.queued` (waits for a run slot), or `response.in_progress`. */
	private phase: "new" | "queued" | "in_progress" = "new";

	constructor(
		readonly head: ResponseHead,
		private readonly write?: (frame: string) => void,
	) {}

	private emit(type: string, payload: Record<string, unknown>): void {
		if (!this.write) return;
		// Whatever the response says of its output comes after `response.in_progress`.
		if (this.phase !== "in_progress" && !OPENING.has(type)) this.begin();
		const data = JSON.stringify({ type, sequence_number: this.sequence++, ...payload });
		this.write(formatFrame({ event: type, data }));
	}

	/** The response is in progress: `response.created` (unless said) and `response.in_progress`, once. */
	begin(): void {
		if (this.phase === "in_progress") return;
		const response = responseObject(this.head, "in_progress", []);
		if (this.phase === "new") this.emit("response.created", { response });
		this.phase = "in_progress";
		this.emit("response.in_progress", { response });
	}

	/**
	 * The response waits for a run slot (admission): `response.created` and `response.queued` with
	 * the status `queued` the first time, `response.queued` again each time its `position` (1 + the
	 * runs of the same tenant ahead of it; a Wheelhouse field) changes. Nothing once it began.
	 */
	queued(position: number): void {
		if (this.phase === "in_progress") return;
		const response = responseObject(this.head, "queued", []);
		if (this.phase === "new") this.emit("response.created", { response });
		this.phase = "queued";
		this.emit("response.queued", { response, position });
	}

	/** A stream that ends before its response began (its wait for a slot failed): an `error` event. */
	error(code: string, message: string): void {
		this.emit("error", { code, message, param: null });
	}

	/** Opens the message item of an assistant message at its first text. */
	private openMessage(): MessageItem {
		if (this.message) return this.message;
		const item: MessageItem = {
			type: "message",
			id: itemId("msg"),
			status: "in_progress",
			role: "assistant",
			content: [],
		};
		this.output.push(item);
		this.message = item;
		const output_index = this.output.length - 1;
		this.emit("response.output_item.added", { output_index, item: { ...item, content: [] } });
		const part: OutputText = { type: "output_text", text: "", annotations: [], logprobs: [] };
		item.content.push(part);
		this.emit("response.content_part.added", { item_id: item.id, output_index, content_index: 0, part: { ...part } });
		return item;
	}

	textDelta(delta: string): void {
		const item = this.openMessage();
		(item.content[0] as OutputText).text += delta;
		this.emit("response.output_text.delta", {
			item_id: item.id,
			output_index: this.output.indexOf(item),
			content_index: 0,
			delta,
			logprobs: [],
		});
	}

	/** Closes the open message item (an assistant message ended). */
	messageEnd(): void {
		const item = this.message;
		if (!item) return;
		this.message = undefined;
		item.status = "completed";
		const output_index = this.output.indexOf(item);
		const part = item.content[0] as OutputText;
		this.emit("response.output_text.done", {
			item_id: item.id,
			output_index,
			content_index: 0,
			text: part.text,
			logprobs: [],
		});
		this.emit("response.content_part.done", { item_id: item.id, output_index, content_index: 0, part });
		this.emit("response.output_item.done", { output_index, item });
	}

	/** A server tool call that finished, as an `mcp_call` item (shown when the client asked to see them). */
	serverTool(call: ServerToolCall): void {
		this.messageEnd();
		const item: ServerToolItem = {
			type: "mcp_call",
			id: itemId("mcp"),
			server_label: "wheelhouse",
			name: call.name,
			arguments: JSON.stringify(call.arguments ?? {}),
			output: call.isError ? null : call.output,
			error: call.isError ? call.output : null,
			status: call.isError ? "failed" : "completed",
		};
		this.output.push(item);
		const output_index = this.output.length - 1;
		this.emit("response.output_item.added", { output_index, item });
		this.emit("response.output_item.done", { output_index, item });
	}

	/** The client tool calls, each a function_call item. */
	functionCalls(calls: ToolCall[]): void {
		for (const call of calls) {
			const item = functionCallItem(call);
			this.output.push(item);
			const output_index = this.output.length - 1;
			this.emit("response.output_item.added", { output_index, item: { ...item, arguments: "" } });
			this.emit("response.function_call_arguments.delta", { item_id: item.id, output_index, delta: item.arguments });
			this.emit("response.function_call_arguments.done", {
				item_id: item.id,
				output_index,
				name: item.name,
				arguments: item.arguments,
			});
			this.emit("response.output_item.done", { output_index, item });
		}
	}

	/**
	 * Closes the output (the open message; the client tool calls as `function_call` items) and
	 * returns the final response object. Its terminal event waits for `announce`, so the caller can
	 * store the response before a client sees it end.
	 */
	finish(end: SegmentEnd, usage: Usage): ResponseObject {
		this.messageEnd();
		if (end.kind === "tool_calls") this.functionCalls(end.calls);
		const { status, error } = endStatus(end);
		return responseObject(this.head, status, this.output, usage, error);
	}

	/** When streaming, the terminal event of the response `finish` returned. */
	announce(response: ResponseObject): void {
		const { status } = response;
		const event =
			status === "failed" ? "response.failed" : status === "completed" ? "response.completed" : "response.incomplete";
		this.emit(event, { response });
	}
}
