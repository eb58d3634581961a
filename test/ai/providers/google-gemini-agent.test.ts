import { Type } from "@sinclair/typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAgentLoop } from "../../../src/agent/loop.js";
import type { AgentMessage, AgentTool } from "../../../src/agent/types.js";
import { closeHttpPools } from "../../../src/ai/http.js";
import type { AssistantMessage, Message, Model } from "../../../src/ai/types.js";
import { type ReplayServer, readFixture, startReplayServer } from "../../helpers/replay-server.js";

/**
 * End to end: the agent loop on the default `streamSimple` (dispatching to google-generative-ai)
 * against a local server replaying recorded Gemini streams: two streamed (Vertex partialArgs) calls
 * run in parallel, then one more call, then the answer; each later request carries the function
 * calls (with their thoughtSignature) and functionResponses back.
 */
let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterAll(async () => {
	await server?.close();
	await closeHttpPools();
});

describe("google-generative-ai in the agent loop (recorded streams)", () => {
	it("runs two tool-using turns with parallel tool execution and replays them to the model", async () => {
		const model: Model<"google-generative-ai"> = {
			id: "gemini-3.1-pro-preview",
			name: "Gemini 3.1 Pro",
			api: "google-generative-ai",
			provider: "google",
			baseUrl: `${server.url}/v1beta`,
			reasoning: true,
			input: ["text", "image"],
			cost: { input: 2, output: 12, cacheRead: 0.2, cacheWrite: 0 },
			contextWindow: 1_048_576,
			maxTokens: 65_536,
		};
		server.enqueue(
			{ body: readFixture("google-generative-ai/streamed-function-call-args-vertex.sse"), split: "random", seed: 5 },
			{ body: readFixture("google-generative-ai/function-call.sse"), split: "random", seed: 6 },
			{ body: readFixture("google-generative-ai/text-basic.sse"), split: "random", seed: 7 },
		);
		let started = 0;
		let release!: () => void;
		const bothStarted = new Promise<void>((resolve) => {
			release = resolve;
		});
		const getWeather: AgentTool = {
			name: "getWeather",
			label: "Weather",
			description: "Weather for a city",
			parameters: Type.Object({ location: Type.String() }),
			execute: async (_id, params: any) => {
				if (++started === 2) release();
				await bothStarted;
				return { content: [{ type: "text", text: `${params.location}: mild` }], details: {} };
			},
		};
		const getCapital: AgentTool = {
			name: "get_capital",
			label: "Capital",
			description: "Capital of a country",
			parameters: Type.Object({ country: Type.String() }),
			execute: async (_id, params: any) => ({
				content: [{ type: "text", text: `${params.country}: Paris` }],
				details: {},
			}),
		};
		const prompt: AgentMessage = {
			role: "user",
			content: "Weather in Boston and SF, then the capital.",
			timestamp: 1,
		};
		const messages = await runAgentLoop(
			[prompt],
			{ systemPrompt: "Be brief.", messages: [], tools: [getWeather, getCapital] },
			{ model, convertToLlm: (m) => m as Message[], apiKey: "k", toolExecution: "parallel", reasoning: "high" },
			() => undefined,
		);

		expect(messages.map((m) => m.role)).toEqual([
			"user",
			"assistant",
			"toolResult",
			"toolResult",
			"assistant",
			"toolResult",
			"assistant",
		]);
		const first = messages[1] as AssistantMessage;
		expect(first.stopReason).toBe("toolUse");
		const signature = first.content[0]?.type === "toolCall" ? first.content[0].thoughtSignature : undefined;
		expect(signature).toMatch(/^CiMBjz1r/);
		const last = messages.at(-1) as AssistantMessage;
		expect(last.stopReason).toBe("stop");
		expect(last.content).toEqual([{ type: "text", text: "The capital of France is Paris.\n" }]);

		expect(server.requests).toHaveLength(3);
		const second = server.requests[1].json;
		expect(second.generationConfig.thinkingConfig).toEqual({ includeThoughts: true, thinkingLevel: "HIGH" });
		expect(second.contents.slice(1)).toEqual([
			{
				role: "model",
				parts: [
					{ functionCall: { name: "getWeather", args: { location: "Boston" } }, thoughtSignature: signature },
					{ functionCall: { name: "getWeather", args: { location: "San Francisco" } } },
				],
			},
			{
				role: "user",
				parts: [
					{ functionResponse: { name: "getWeather", response: { output: "Boston: mild" } } },
					{ functionResponse: { name: "getWeather", response: { output: "San Francisco: mild" } } },
				],
			},
		]);
		const third = server.requests[2].json;
		expect(third.contents.map((c: any) => c.role)).toEqual(["user", "model", "user", "model", "user"]);
		expect(third.contents[3].parts).toEqual([{ functionCall: { name: "get_capital", args: { country: "France" } } }]);
		expect(third.contents[4].parts).toEqual([
			{ functionResponse: { name: "get_capital", response: { output: "France: Paris" } } },
		]);
	});
});
