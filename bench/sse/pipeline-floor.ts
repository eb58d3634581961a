/**
 * The floor under bench/sse's events/s, measured in-process: what the server must spend per event
 * before any HTTP, JSON or event log — an `Agent` running the faux/echo model's text streamer at
 * 0 ms (which yields to the event loop between deltas, so one long answer cannot starve other streams) with a no-op
 * listener. Reported as process CPU µs per event, the median of `rounds` prompts of `deltas` words.
 */
import { Agent } from "../../src/agent/agent.js";
import type { StreamFn } from "../../src/agent/types.js";
import { createEchoModel, streamEchoText } from "../../src/server/runtime/echo-model.js";

export async function pipelineFloorUsPerEvent(deltas: number, rounds = 12): Promise<number> {
	const model = createEchoModel();
	const text = Array.from({ length: deltas }, (_, i) => `w${i}`).join(" ");
	const streamFn: StreamFn = (m, context, options) =>
		streamEchoText(m, text, { signal: options?.signal, delayMs: 0, context });
	const perEvent: number[] = [];
	for (let r = 0; r < rounds + 2; r++) {
		const agent = new Agent({ initialState: { model, systemPrompt: "", tools: [] }, streamFn });
		let events = 0;
		agent.subscribe(() => {
			events++;
		});
		const before = process.cpuUsage();
		await agent.prompt("go");
		const used = process.cpuUsage(before);
		// The first two rounds warm the JIT.
		if (r >= 2) perEvent.push((used.user + used.system) / events);
	}
	perEvent.sort((a, b) => a - b);
	return perEvent[Math.floor(perEvent.length / 2)] as number;
}
