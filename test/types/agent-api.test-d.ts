/** Type-level contract of the public API: tool parameter inference, StreamFn compatibility, root exports. */
import { Type } from "@sinclair/typebox";
import { describe, expectTypeOf, it } from "vitest";
import {
	Agent,
	type AgentEvent,
	type AgentTool,
	type AssistantMessageEventStream,
	agentLoop,
	type EventStream,
	type ModelThinkingLevel,
	type StreamFn,
	streamScriptedTurn,
	streamSimple,
	type ThinkingLevel,
} from "../../src/index.js";

describe("public API types", () => {
	it("infers execute params from the TypeBox schema", () => {
		const tool: AgentTool<ReturnType<typeof params>, { bytes: number }> = {
			name: "read",
			label: "Read",
			description: "read a file",
			parameters: params(),
			execute: async (_id, args, _signal, onUpdate) => {
				expectTypeOf(args).toEqualTypeOf<{ path: string; limit?: number }>();
				onUpdate?.({ content: [], details: { bytes: 1 } });
				return { content: [{ type: "text", text: args.path }], details: { bytes: 1 } };
			},
		};
		expectTypeOf(tool.executionMode).toEqualTypeOf<"sequential" | "parallel" | undefined>();
	});

	it("accepts streamSimple and scripted streams as a StreamFn", () => {
		expectTypeOf(streamSimple).toExtend<StreamFn>();
		const fn: StreamFn = (model, _context, options) =>
			streamScriptedTurn(model, { content: "x" }, { signal: options?.signal });
		expectTypeOf(fn).returns.toExtend<AssistantMessageEventStream | Promise<AssistantMessageEventStream>>();
		expectTypeOf(agentLoop).returns.toEqualTypeOf<
			EventStream<AgentEvent, import("../../src/index.js").AgentMessage[]>
		>();
	});

	it("exports the agent's ThinkingLevel at the root, the model's as ModelThinkingLevel", () => {
		expectTypeOf<ThinkingLevel>().toEqualTypeOf<"off" | "minimal" | "low" | "medium" | "high" | "xhigh">();
		expectTypeOf<ModelThinkingLevel>().toEqualTypeOf<"off" | "minimal" | "low" | "medium" | "high" | "xhigh">();
		const agent = new Agent();
		expectTypeOf(agent.state.thinkingLevel).toEqualTypeOf<ThinkingLevel>();
		expectTypeOf(agent.prompt).toBeCallableWith("hi");
		expectTypeOf(agent.subscribe).parameter(0).parameters.toEqualTypeOf<[AgentEvent, AbortSignal]>();
	});
});

function params() {
	return Type.Object({ path: Type.String(), limit: Type.Optional(Type.Number()) });
}
