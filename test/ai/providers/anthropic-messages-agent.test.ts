import { Type } from "@sinclair/typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAgentLoop } from "../../../src/agent/loop.js";
import type { AgentEvent, AgentMessage, AgentTool } from "../../../src/agent/types.js";
import { closeHttpPools } from "../../../src/ai/http.js";
import type { AssistantMessage, Message, Model } from "../../../src/ai/types.js";
import { type ReplayServer, readFixture, startReplayServer } from "../../helpers/replay-server.js";

/**
 * End to end: the agent loop on the default `streamSimple` (dispatching to anthropic-messages) against
 * a local server replaying recorded Anthropic streams: three parallel tool calls, then one more tool
 * call, then the answer. The tools run in parallel (each waits until all three have started), and
 * every later request carries the earlier turns back exactly.
 */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterAll(async () => {
	await server?.close();
	await closeHttpPools();
});

/** Resolves once `count` calls arrived: proves the calls overlap without any timing assumption. */
function barrier(count: number) {
	let arrived = 0;
	let release!: () => void;
	const all = new Promise<void>((resolve) => {
		release = resolve;
	});
	return () => {
		arrived++;
		if (arrived === count) release();
		return all;
	};
}

describe("anthropic-messages in the agent loop (recorded streams)", () => {
	it("runs two tool-using turns with parallel tool execution and replays them to the model", async () => {
		const model: Model<"anthropic-messages"> = {
			id: "claude-sonnet-4-5-20250929",
			name: "Claude Sonnet 4.5",
			api: "anthropic-messages",
			provider: "anthropic",
			baseUrl: server.url,
			reasoning: true,
			input: ["text", "image"],
			cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
			contextWindow: 200_000,
			maxTokens: 64_000,
		};
		server.enqueue(
			{ body: readFixture("anthropic-messages/parallel-tool-use.sse"), split: "random", seed: 2 },
			{ body: readFixture("anthropic-messages/text-then-tool-use.sse"), split: "random", seed: 3 },
			{ body: readFixture("anthropic-messages/text-basic.sse"), split: "random", seed: 4 },
		);
		const allStarted = barrier(3);
		const searched: string[] = [];
		const searchDocs: AgentTool = {
			name: "searchDocs",
			label: "Search docs",
			description: "Search the docs",
			parameters: Type.Object({ query: Type.String() }),
			execute: async (_id, params: any) => {
				searched.push(params.query);
				await allStarted();
				return { content: [{ type: "text", text: `results for ${params.query}` }], details: {} };
			},
		};
		const getWeather: AgentTool = {
			name: "get_weather",
			label: "Weather",
			description: "Weather for a city",
			parameters: Type.Object({ city: Type.String() }),
			execute: async (_id, params: any) => ({
				content: [{ type: "text", text: `${params.city}: 18°C` }],
				details: {},
			}),
		};
		const events: AgentEvent[] = [];
		const prompt: AgentMessage = {
			role: "user",
			content: "Search alpha, beta, gamma; then the weather.",
			timestamp: 1,
		};
		const messages = await runAgentLoop(
			[prompt],
			{ systemPrompt: "Be brief.", messages: [], tools: [searchDocs, getWeather] },
			{ model, convertToLlm: (m) => m as Message[], apiKey: "k", toolExecution: "parallel" },
			(event) => void events.push(event),
		);

		expect(messages.map((m) => m.role)).toEqual([
			"user",
			"assistant",
			"toolResult",
			"toolResult",
			"toolResult",
			"assistant",
			"toolResult",
			"assistant",
		]);
		expect(searched.sort()).toEqual(["alpha", "beta", "gamma"]);
		const last = messages.at(-1) as AssistantMessage;
		expect(last.stopReason).toBe("stop");
		expect(last.content).toEqual([
			{
				type: "text",
				text: "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
			},
		]);
		expect(events.filter((e) => e.type === "tool_execution_end")).toHaveLength(4);

		// Request 2 replays turn 1: the three tool_use blocks and one user message with the three results.
		expect(server.requests).toHaveLength(3);
		const second = server.requests[1].json;
		expect(second.messages[1]).toEqual({
			role: "assistant",
			content: [
				{ type: "tool_use", id: "toolu_01LtEf4h1QW7KCKLsYMuhTNB", name: "searchDocs", input: { query: "alpha" } },
				{ type: "tool_use", id: "toolu_016tfZE7otAFSBjhc67wu189", name: "searchDocs", input: { query: "beta" } },
				{ type: "tool_use", id: "toolu_01XkU35z8BVWqqc9tijDuLrA", name: "searchDocs", input: { query: "gamma" } },
			],
		});
		expect(second.messages[2].content.map((b: any) => [b.type, b.tool_use_id, b.content])).toEqual([
			["tool_result", "toolu_01LtEf4h1QW7KCKLsYMuhTNB", "results for alpha"],
			["tool_result", "toolu_016tfZE7otAFSBjhc67wu189", "results for beta"],
			["tool_result", "toolu_01XkU35z8BVWqqc9tijDuLrA", "results for gamma"],
		]);
		const third = server.requests[2].json;
		expect(third.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
		expect(third.messages[3].content).toEqual([
			{ type: "text", text: "Let me check." },
			{
				type: "tool_use",
				id: "toolu_01Ni1uw4HXYxUhc4iFMqx7yY",
				name: "get_weather",
				input: { city: "San Francisco" },
			},
		]);
		expect(third.messages[4].content[0]).toMatchObject({
			type: "tool_result",
			tool_use_id: "toolu_01Ni1uw4HXYxUhc4iFMqx7yY",
			content: "San Francisco: 18°C",
		});
	});
});
