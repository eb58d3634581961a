import { Type } from "@sinclair/typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentLoop } from "../../../src/agent/loop.js";
import type { AgentEvent, AgentMessage, AgentTool } from "../../../src/agent/types.js";
import { closeHttpPools } from "../../../src/ai/http.js";
import { registerCustomModel, unregisterModel } from "../../../src/ai/models.js";
import type { Message } from "../../../src/ai/types.js";
import { type ReplayServer, readFixture, startReplayServer } from "../../helpers/replay-server.js";

/**
 * End to end: the agent loop (default stream function = streamSimple → the Chat Completions
 * provider over undici) against a local server replaying recorded OpenAI streams: turn 1 calls two
 * tools in parallel, turn 2 calls one tool with streamed arguments, turn 3 answers in text.
 */
describe("agent loop over the OpenAI Chat Completions provider", () => {
	let server: ReplayServer;
	beforeAll(async () => {
		server = await startReplayServer();
	});
	afterAll(async () => {
		unregisterModel("local-replay", "gpt-4o");
		await server.close();
		await closeHttpPools();
	});

	it("runs two tool-using turns with parallel tool execution, then answers", async () => {
		server.enqueue(
			{ body: readFixture("openai-completions/parallel-tool-calls-empty-args.sse"), split: "random", seed: 5 },
			{ body: readFixture("openai-completions/tool-call-streamed-args.sse"), split: "random", seed: 6 },
			{ body: readFixture("openai-completions/text-basic.sse"), split: "random", seed: 7 },
		);
		const model = registerCustomModel({
			provider: "local-replay",
			id: "gpt-4o",
			baseUrl: `${server.url}/v1`,
			input: ["text"],
			cost: { input: 2.5, output: 10 },
		});

		// Parallel proof without timing: each of the two first tools waits until both have started.
		const started = new Set<string>();
		let bothStarted!: () => void;
		const barrier = new Promise<void>((resolve) => {
			bothStarted = resolve;
		});
		let barrierPassed = 0;
		const waitForBoth = async (name: string) => {
			started.add(name);
			if (started.has("get_country") && started.has("get_product_name")) bothStarted();
			const timeout = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 5_000).unref());
			if ((await Promise.race([barrier, timeout])) !== "timeout") barrierPassed++;
		};
		const calls: { name: string; args: unknown }[] = [];
		const tool = (name: string, parameters: any, result: (args: any) => Promise<string>): AgentTool<any> => ({
			name,
			label: name,
			description: `The ${name.replace("get_", "")}`,
			parameters,
			execute: async (_id, args) => {
				calls.push({ name, args });
				return { content: [{ type: "text", text: await result(args) }], details: { name } };
			},
		});
		const tools = [
			tool("get_country", Type.Object({}), async () => {
				await waitForBoth("get_country");
				return "Mexico";
			}),
			tool("get_product_name", Type.Object({}), async () => {
				await waitForBoth("get_product_name");
				return "Pydantic AI";
			}),
			tool("get_weather", Type.Object({ city: Type.String() }), async (args) => `Sunny in ${args.city}`),
		];

		const prompt: AgentMessage = {
			role: "user",
			content: "What is the weather in the capital of my country?",
			timestamp: 1,
		};
		const stream = agentLoop(
			[prompt],
			{ systemPrompt: "Use the tools.", messages: [], tools },
			{
				model,
				apiKey: "sk-local",
				toolExecution: "parallel",
				convertToLlm: (messages) => messages as Message[],
			},
		);
		const events: AgentEvent[] = [];
		for await (const event of stream) events.push(event);
		const messages = await stream.result();

		// The conversation the loop built.
		expect(messages.map((m: any) => `${m.role}${m.role === "assistant" ? `:${m.stopReason}` : ""}`)).toEqual([
			"user",
			"assistant:toolUse",
			"toolResult",
			"toolResult",
			"assistant:toolUse",
			"toolResult",
			"assistant:stop",
		]);
		const final = messages.at(-1) as any;
		expect(final.content).toEqual([{ type: "text", text: "The capital of Mexico is Mexico City." }]);
		expect(final.usage).toMatchObject({ input: 14, output: 8 });
		expect(final.usage.cost.total).toBeCloseTo((14 * 2.5 + 8 * 10) / 1e6, 12);
		expect(calls).toEqual(
			expect.arrayContaining([
				{ name: "get_country", args: {} },
				{ name: "get_product_name", args: {} },
				{ name: "get_weather", args: { city: "Mexico City" } },
			]),
		);
		expect(calls).toHaveLength(3);
		expect(barrierPassed).toBe(2);

		// Both tools of turn 1 started before either finished.
		const toolEvents = events
			.filter((e) => e.type === "tool_execution_start" || e.type === "tool_execution_end")
			.map((e: any) => `${e.type === "tool_execution_start" ? "start" : "end"}:${e.toolName}`);
		expect(toolEvents.slice(0, 2).every((e) => e.startsWith("start:"))).toBe(true);
		expect(toolEvents.slice(4)).toEqual(["start:get_weather", "end:get_weather"]);
		expect(events[0]!.type).toBe("agent_start");
		expect(events.at(-1)!.type).toBe("agent_end");
		expect(events.filter((e) => e.type === "turn_start")).toHaveLength(3);

		// What the provider sent: the tool calls and their results went back to the model, in order.
		expect(server.requests).toHaveLength(3);
		expect(server.requests.every((r) => r.headers.authorization === "Bearer sk-local")).toBe(true);
		const second = server.requests[1]!.json.messages;
		expect(second.map((m: any) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool"]);
		expect(second[2].tool_calls.map((c: any) => c.function.name)).toEqual(["get_country", "get_product_name"]);
		expect(second.slice(3)).toEqual([
			{ role: "tool", tool_call_id: "call_q2UyBRP7eXNTzAoR8lEhjc9Z", content: "Mexico" },
			{ role: "tool", tool_call_id: "call_b51ijcpFkDiTQG1bQzsrmtW5", content: "Pydantic AI" },
		]);
		const third = server.requests[2]!.json.messages;
		expect(third.at(-2).tool_calls).toEqual([
			{
				id: "call_LwxJUB9KppVyogRRLQsamRJv",
				type: "function",
				function: { name: "get_weather", arguments: '{"city":"Mexico City"}' },
			},
		]);
		expect(third.at(-1)).toEqual({
			role: "tool",
			tool_call_id: "call_LwxJUB9KppVyogRRLQsamRJv",
			content: "Sunny in Mexico City",
		});
		expect(server.requests[0]!.json.tools.map((t: any) => t.function.name)).toEqual([
			"get_country",
			"get_product_name",
			"get_weather",
		]);
	});
});
