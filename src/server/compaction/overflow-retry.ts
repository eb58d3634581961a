/**
 * Sends a model call once more when its first answer is a context-overflow error, after the caller
 * made room: the loop sees one answer, either the first or the retried one, never both.
 */
import type { StreamFn } from "../../agent/types.js";
import { createAssistantMessage } from "../../ai/assistant-message.js";
import { AssistantMessageEventStream } from "../../ai/event-stream.js";
import type { AssistantMessageEvent, Model } from "../../ai/types.js";
import { isContextOverflow } from "./overflow.js";

export interface OverflowRetry {
	/** After an overflow: make room and return the call to send instead, or undefined to let the error through. */
	retry(): Promise<ReturnType<StreamFn> | undefined>;
	/** Whether retrying is still worth it (not when the run was aborted meanwhile). */
	allowed(): boolean;
	/** Model the error message of a failed relay is attributed to. */
	model: Model<any>;
	onError(err: unknown): void;
}

/**
 * Relays `first`, holding back its `start` until the next event shows whether the call failed for
 * a context overflow (providers send that error before any content). On an overflow, relays the
 * call `retry()` returns instead (once); otherwise the held `start` and everything after it.
 * Never throws: a failure of the relay itself ends the stream with an error message.
 */
export function relayWithOverflowRetry(first: ReturnType<StreamFn>, hooks: OverflowRetry): AssistantMessageEventStream {
	const out = new AssistantMessageEventStream();
	const pipe = async (source: AssistantMessageEventStream, held: AssistantMessageEvent[]) => {
		for (const event of held) out.push(event);
		for await (const event of source) out.push(event);
		out.end(await source.result());
	};
	const run = async () => {
		const source = await first;
		const held: AssistantMessageEvent[] = [];
		for await (const event of source) {
			if (event.type === "start") {
				held.push(event);
				continue;
			}
			if (event.type === "error" && isContextOverflow(event.error) && hooks.allowed()) {
				const again = await hooks.retry();
				if (again) return pipe(await again, []);
			}
			held.push(event);
			return pipe(source, held);
		}
		return pipe(source, held);
	};
	run().catch((err: unknown) => {
		hooks.onError(err);
		const errorMessage = err instanceof Error ? err.message : String(err);
		out.push({
			type: "error",
			reason: "error",
			error: { ...createAssistantMessage(hooks.model), stopReason: "error", errorMessage },
		});
	});
	return out;
}
