/**
 * The tool module bench/cluster loads into every replica (WHEELHOUSE_TOOL_MODULES): `bench_wait`
 * runs until the process gets SIGUSR2 (the orchestrator's "release", since the replica running the
 * tool is another process), or until the run is aborted.
 */
import { Type } from "@sinclair/typebox";
import type { AgentTool } from "../../src/agent/types.js";

const waiting = new Set<() => void>();
process.on("SIGUSR2", () => {
	for (const release of [...waiting]) release();
});

export const tools: AgentTool<any>[] = [
	{
		name: "bench_wait",
		label: "Bench wait",
		description: "Waits until the benchmark releases it (SIGUSR2) or the run is aborted.",
		parameters: Type.Object({}),
		execute: (_id, _params, signal) =>
			new Promise((resolve, reject) => {
				const release = () => {
					waiting.delete(release);
					signal?.removeEventListener("abort", onAbort);
					resolve({ content: [{ type: "text", text: "released" }], details: {} });
				};
				const onAbort = () => {
					waiting.delete(release);
					reject(new Error("aborted"));
				};
				if (signal?.aborted) return onAbort();
				signal?.addEventListener("abort", onAbort, { once: true });
				waiting.add(release);
			}),
	},
];
