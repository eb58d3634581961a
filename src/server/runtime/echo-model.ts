/**
 * `faux/echo`: the stand-in model a server without provider keys runs on, so it works out of the
 * box and tool use and steering can be tried by hand. It is registered like any provider (api
 * `"faux-echo"`, distinct from the scripted test model's `"faux"`), and `GET /v1/models` marks it
 * as a stand-in.
 *
 * What it answers, from the last message of the context:
 * - a user message `/tool NAME {json}` → one call of tool NAME with those arguments;
 * - a user message `/tools [{"name": ..., "arguments": ...}, ...]` → several calls in one message;
 * - tool results (after its own calls) → `Tool results: ...` with each result's text;
 * - any other user message → the same text, streamed back one word per text delta,
 *   `delayMs` apart (0 still yields to the event loop between deltas).
 * It honours abort (the turn ends with `stopReason: "aborted"`).
 *
 * Text answers (the common case, and what bench/sse measures) are streamed by {@link streamEchoText},
 * a lean version of the scripted model's streamer: like a real provider it grows one partial
 * message in place instead of copying it per delta, and it yields with a bare `setImmediate` (no
 * promise) at 0 ms. Tool calls go through `streamScriptedTurn`.
 */

import { createAssistantMessage } from "../../ai/assistant-message.js";
import { AssistantMessageEventStream } from "../../ai/event-stream.js";
import { ABORTED_MESSAGE, estimateUsage, streamScriptedTurn } from "../../ai/providers/faux.js";
import { registerApiProvider } from "../../ai/registry.js";
import { errorStream } from "../../ai/stream.js";
import type {
	AssistantMessage,
	Context,
	Message,
	Model,
	SimpleStreamOptions,
	TextContent,
	ToolCall,
	ToolResultMessage,
} from "../../ai/types.js";

export const ECHO_API = "faux-echo";
export const ECHO_MODEL_SPEC = "faux/echo";

/** The `faux/echo` model description. */
export function createEchoModel(): Model<typeof ECHO_API> {
	return {
		id: "echo",
		name: "Echo (stand-in: no LLM; set a provider key for a real model)",
		api: ECHO_API,
		provider: "faux",
		baseUrl: "http://localhost:0",
		reasoning: false,
		input: ["text", "image"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 1_000_000,
		maxTokens: 1_000_000,
	};
}

let callCounter = 0;

function textOf(message: Message): string {
	if (typeof message.content === "string") return message.content;
	return message.content
		.filter((block) => block.type === "text")
		.map((block) => (block as { text: string }).text)
		.join("\n");
}

type Turn = { content: string | (ToolCall | { type: "text"; text: string })[] };

function toolCall(name: string, args: unknown): ToolCall {
	callCounter += 1;
	return {
		type: "toolCall",
		id: `echo_call_${Date.now().toString(36)}_${callCounter}`,
		name,
		arguments: (args && typeof args === "object" && !Array.isArray(args) ? args : {}) as Record<string, unknown>,
	};
}

/** Parses `/tool NAME {json}` / `/tools [...]`; a usage hint as text when malformed. */
function commandTurn(text: string): Turn | undefined {
	const trimmed = text.trim();
	const single = /^\/tool\s+(\S+)\s*([\s\S]*)$/.exec(trimmed);
	if (single) {
		const [, name, rawArgs] = single;
		try {
			const args = rawArgs.trim() === "" ? {} : JSON.parse(rawArgs);
			return { content: [toolCall(name, args)] };
		} catch {
			return {
				content: `Usage: /tool NAME {"arg": "value"} (the arguments must be a JSON object; got ${rawArgs.trim()})`,
			};
		}
	}
	const multi = /^\/tools\s+([\s\S]*)$/.exec(trimmed);
	if (multi) {
		try {
			const calls = JSON.parse(multi[1]) as { name?: unknown; arguments?: unknown }[];
			if (!Array.isArray(calls) || calls.length === 0 || calls.some((c) => typeof c?.name !== "string"))
				throw new Error();
			return { content: calls.map((c) => toolCall(c.name as string, c.arguments ?? {})) };
		} catch {
			return { content: 'Usage: /tools [{"name": "NAME", "arguments": {...}}, ...]' };
		}
	}
	return undefined;
}

/** Decides the echo model's turn from the context. */
export function echoTurn(context: Context): Turn {
	const messages = context.messages;
	const last = messages[messages.length - 1];
	if (!last) return { content: "(nothing to echo)" };
	if (last.role === "toolResult") {
		const results: ToolResultMessage[] = [];
		for (let i = messages.length - 1; i >= 0 && messages[i].role === "toolResult"; i--) {
			results.unshift(messages[i] as ToolResultMessage);
		}
		const parts = results.map((r) => `${r.toolName}${r.isError ? " (error)" : ""}: ${textOf(r)}`);
		return { content: `Tool results: ${parts.join("; ")}` };
	}
	if (last.role === "user") {
		const text = textOf(last);
		return commandTurn(text) ?? { content: text.length > 0 ? text : "(nothing to echo)" };
	}
	return { content: textOf(last as AssistantMessage) || "(nothing to echo)" };
}

/**
 * Streams `text` as one text block, one word per `text_delta` (whitespace kept with the word), with
 * the scripted model's protocol and usage estimate: `start`, `text_start`, the deltas, `text_end`,
 * `done`. Before each delta it waits `delayMs`, and at 0 it still yields to the event loop
 * (`setImmediate`), so a long answer never monopolises it and concurrent sessions interleave.
 * Abort ends the stream with an `error` event whose message has `stopReason: "aborted"` and the
 * text streamed so far.
 *
 * The partial message (and its text block) is updated in place, as real providers do; consumers
 * copy what they keep (the agent loop hands out a shallow copy per `message_update`, and the
 * server serialises each event synchronously).
 */
export function streamEchoText(
	model: Model<any>,
	text: string,
	options: { signal?: AbortSignal; delayMs: number; context?: Context },
): AssistantMessageEventStream {
	const stream = new AssistantMessageEventStream();
	const { signal, delayMs, context } = options;
	const words = text.match(/\s*\S+\s*/g) ?? [text];
	const block: TextContent = { type: "text", text: "" };
	const partial: AssistantMessage = createAssistantMessage(model);
	let next = 0;
	let timer: NodeJS.Timeout | undefined;
	// Set by the abort listener: read per delta, where `signal.aborted` (a validating getter) costs more.
	let aborted = false;

	const abort = () => {
		if (timer) clearTimeout(timer);
		timer = undefined;
		signal?.removeEventListener("abort", onAbort);
		const error: AssistantMessage = {
			...partial,
			content: partial.content.map((b) => ({ ...b })),
			stopReason: "aborted",
			errorMessage: ABORTED_MESSAGE,
		};
		stream.push({ type: "error", reason: "aborted", error });
	};
	// Wakes a pending delayed step at once (the scripted model's pause does the same).
	const onAbort = () => {
		aborted = true;
		if (timer) {
			clearTimeout(timer);
			timer = undefined;
			step();
		}
	};
	const finish = () => {
		signal?.removeEventListener("abort", onAbort);
		const final = { type: "text" as const, text };
		partial.content[0] = final;
		stream.push({ type: "text_end", contentIndex: 0, content: text, partial });
		const message: AssistantMessage = {
			...partial,
			content: [final],
			usage: estimateUsage([final], context),
			stopReason: "stop",
			timestamp: Date.now(),
		};
		stream.push({ type: "done", reason: "stop", message });
	};
	const schedule = () => {
		if (delayMs <= 0 || aborted) setImmediate(step);
		else timer = setTimeout(step, delayMs);
	};
	function step(): void {
		timer = undefined;
		if (aborted) {
			abort();
			return;
		}
		const delta = words[next++];
		block.text += delta;
		stream.push({ type: "text_delta", contentIndex: 0, delta, partial });
		if (next < words.length) schedule();
		else finish();
	}

	if (signal?.aborted) {
		abort();
		return stream;
	}
	// The stream queues events until its consumer reads them, so the first two go in at once.
	stream.push({ type: "start", partial });
	partial.content.push(block);
	stream.push({ type: "text_start", contentIndex: 0, partial });
	signal?.addEventListener("abort", onAbort, { once: true });
	schedule();
	return stream;
}

/**
 * Registers the echo model's wire API. `delayMs` is read on every call, so tests and config can
 * change it. Returns the model.
 */
export function registerEchoModel(options: { delayMs: () => number }): Model<typeof ECHO_API> {
	const model = createEchoModel();
	registerApiProvider(ECHO_API, (m: Model<any>, context: Context, streamOptions?: SimpleStreamOptions) => {
		try {
			const turn = echoTurn(context);
			if (typeof turn.content === "string" && turn.content !== "") {
				return streamEchoText(m, turn.content, { signal: streamOptions?.signal, delayMs: options.delayMs(), context });
			}
			return streamScriptedTurn(m, turn, {
				signal: streamOptions?.signal,
				context,
				chunk: "word",
				delayMs: options.delayMs(),
			});
		} catch (err) {
			return errorStream(m, `echo model failed: ${(err as Error).message}`);
		}
	});
	return model;
}
