/**
 * A test tool that runs until the test releases it: lets a test act while a tool is executing
 * (steer mid-tool, abort mid-tool) without sleeping. It honours the abort signal.
 */
import { Type } from "@sinclair/typebox";
import type { AgentTool } from "../../src/agent/types.js";

export interface GateTool {
	tool: AgentTool<any>;
	/** Resolves when the n-th call (1-based, default 1) has started (at once if it already has). */
	started(n?: number): Promise<void>;
	/** Lets every running call finish with `text`. */
	release(text?: string): void;
	calls: number;
	aborted: number;
}

export function createGateTool(name = "wait_for_gate"): GateTool {
	const waiting: ((text: string) => void)[] = [];
	const startWaiters: { n: number; resolve: () => void }[] = [];
	const gate: GateTool = {
		calls: 0,
		aborted: 0,
		tool: {
			name,
			label: "Wait for gate",
			description: "Waits until the test releases it.",
			parameters: Type.Object({}),
			execute: (_id, _params, signal) =>
				new Promise((resolve, reject) => {
					gate.calls += 1;
					const onAbort = () => {
						gate.aborted += 1;
						reject(new Error("gate tool aborted"));
					};
					if (signal?.aborted) return onAbort();
					signal?.addEventListener("abort", onAbort, { once: true });
					waiting.push((text) => {
						signal?.removeEventListener("abort", onAbort);
						resolve({ content: [{ type: "text", text }], details: {} });
					});
					for (const w of startWaiters.filter((w) => w.n <= gate.calls)) {
						startWaiters.splice(startWaiters.indexOf(w), 1);
						w.resolve();
					}
				}),
		},
		started(n) {
			const target = n ?? 1;
			if (gate.calls >= target) return Promise.resolve();
			return new Promise((resolve) => startWaiters.push({ n: target, resolve }));
		},
		release(text = "gate released") {
			for (const finish of waiting.splice(0)) finish(text);
		},
	};
	return gate;
}
