/**
 * The layers around a session's model calls are composed in one stated order — lease, budget,
 * tracing, then the session's current config — whatever order the extensions gave them in.
 */
import { describe, expect, it } from "vitest";
import type { StreamFn } from "../../../src/agent/types.js";
import {
	buildModelCallChain,
	type ModelCallHooks,
	type ModelCallLayer,
	type TransformContext,
} from "../../../src/server/runtime/session/model-calls.js";

function recording(order: string[], name: string): ModelCallHooks {
	return {
		stream: (inner) =>
			((model, context, options) => {
				order.push(name);
				return inner(model, context, options);
			}) as StreamFn,
		beforeToolCall: (inner) => async (context, signal) => {
			order.push(`${name}:tool`);
			return inner(context, signal);
		},
	};
}

describe("the model-call chain", () => {
	for (const given of [
		["tracing", "budget", "lease"],
		["lease", "tracing", "budget"],
		["budget", "lease", "tracing"],
	] as ModelCallLayer[][]) {
		it(`runs lease, budget, tracing, then the session's call (layers given as ${given.join(", ")})`, async () => {
			const order: string[] = [];
			const layers = new Map<ModelCallLayer, ModelCallHooks>();
			for (const layer of given) layers.set(layer, recording(order, layer));
			const chain = buildModelCallChain(layers, {
				stream: (() => {
					order.push("session");
					return undefined;
				}) as unknown as StreamFn,
				beforeToolCall: async () => {
					order.push("session:tool");
					return undefined;
				},
			});
			chain.stream({} as never, {} as never);
			await chain.beforeToolCall({} as never);
			expect(order).toEqual([
				"lease",
				"budget",
				"tracing",
				"session",
				"lease:tool",
				"budget:tool",
				"tracing:tool",
				"session:tool",
			]);
		});
	}

	it("keeps the first transform and conversion given from the inside out, and none when no layer gives one", () => {
		const none = buildModelCallChain(new Map(), {
			stream: (() => undefined) as unknown as StreamFn,
			beforeToolCall: async () => undefined,
		});
		expect(none.transformContext).toBeUndefined();
		expect(none.convertToLlm).toBeUndefined();
		const convert: ModelCallHooks["convertToLlm"] = () => [];
		const transform: TransformContext = async (messages) => messages;
		const layers = new Map<ModelCallLayer, ModelCallHooks>();
		layers.set("budget", { convertToLlm: convert, transformContext: () => transform });
		layers.set("lease", { transformContext: (inner) => inner && (async (m, s) => inner(m, s)) });
		const chain = buildModelCallChain(layers, {
			stream: (() => undefined) as unknown as StreamFn,
			beforeToolCall: async () => undefined,
		});
		expect(chain.convertToLlm).toBe(convert);
		expect(chain.transformContext).toBeDefined();
		expect(chain.transformContext).not.toBe(transform);
	});
});
