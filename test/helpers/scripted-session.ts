/**
 * A server with one scripted model of a small context window, for the compaction and budget
 * tests: each model call is answered by the next scripted step, and the exact request it was
 * sent (system prompt and messages) is recorded.
 */

import type { ScriptedTurn } from "../../src/ai/providers/faux.js";
import { registerFauxProvider } from "../../src/ai/providers/faux.js";
import type { AssistantMessage, Context, Usage } from "../../src/ai/types.js";
import type { TestServer } from "./server.js";

export const CONTEXT_WINDOW = 4_000;

/** Registered once per test file (the api registry is keyed by api name). */
export function scriptedModel(api: string) {
	const faux = registerFauxProvider({
		api,
		provider: "scripted",
		models: [
			{
				id: "small",
				contextWindow: CONTEXT_WINDOW,
				maxTokens: 1_000,
				cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
			},
		],
	});
	const requests: Context[] = [];
	return {
		faux,
		spec: `scripted/${faux.getModel().id}`,
		/** Every request the model received, in order. */
		requests,
		/** Scripts the next calls; each records its request before answering. */
		script(...turns: (ScriptedTurn | (() => Promise<ScriptedTurn>))[]) {
			faux.setResponses(
				turns.map((turn) => async (context: Context) => {
					requests.push({
						systemPrompt: context.systemPrompt,
						messages: JSON.parse(JSON.stringify(context.messages)),
						tools: context.tools?.map((tool) => ({ ...tool })),
					});
					return typeof turn === "function" ? turn() : turn;
				}),
			);
		},
	};
}

/** A usage report of `total` tokens costing `cost` dollars. */
export function usage(total: number, cost = 0): Usage {
	return {
		input: total - 10,
		output: 10,
		cacheRead: 0,
		cacheWrite: 0,
		totalTokens: total,
		cost: { input: cost, output: 0, cacheRead: 0, cacheWrite: 0, total: cost },
	};
}

/** A text of exactly 400 characters (100 estimated tokens) that starts with `label`. */
export function text400(label: string): string {
	return label.padEnd(400, ".");
}

/** Prompts and waits until the run is over. */
export async function promptAndWait(server: TestServer, id: string, message: string): Promise<void> {
	const res = await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message } });
	if (res.status !== 202) throw new Error(`prompt answered ${res.status}: ${JSON.stringify(res.body)}`);
	await server.app.wheelhouse.sessions.get(id, null).waitForIdle();
}

/** The stored transcript. */
export async function transcript(server: TestServer, id: string): Promise<any[]> {
	return (await server.request("GET", `/v1/sessions/${id}/messages?limit=1000`)).body.messages;
}

/** The text of a request message's first text block. */
export function textOf(message: Context["messages"][number] | AssistantMessage | undefined): string {
	const content = (message as { content?: unknown })?.content;
	if (typeof content === "string") return content;
	return ((content as { type: string; text?: string }[]) ?? []).find((b) => b.type === "text")?.text ?? "";
}
