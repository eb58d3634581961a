/**
 * Client tool round trips through the OpenAI facade with the real client libraries, which send the
 * whole conversation again (user message, function call, its output) without
 * `previous_response_id`: the AI SDK's Responses provider, LangChain with `useResponsesApi`, the
 * OpenAI Agents SDK, and Chat Completions through the AI SDK. The run that waits for the tool's
 * result must get it: one session serves both requests, it ends idle with nothing waiting, and
 * with one run allowed per key the follow-up is not refused.
 *
 * The model is `faux/echo`: `/tool NAME {json}` makes it call NAME, and after the result it answers
 * `Tool results: ...`.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { type AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { Agent, tool as agentTool, OpenAIResponsesModel, run, setTracingDisabled } from "@openai/agents";
import { generateText, stepCountIs, streamText, tool } from "ai";
import OpenAI from "openai";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
const PROMPT = '/tool pick_color {"question":"favourite?"}';
const DESCRIPTION = "Ask the user to pick a color";

let server: TestServer;
/** The `x-wheelhouse-session-id` of every facade answer, in order. */
let answeredBy: string[];

/** The `fetch` each library is given: it notes which session answered. */
const recordingFetch: typeof fetch = async (input, init) => {
	const response = await fetch(input, init);
	const id = response.headers.get("x-wheelhouse-session-id");
	if (id) answeredBy.push(id);
	return response;
};

afterEach(async () => {
	await server?.close();
});

beforeAll(() => {
	// The Agents SDK would export traces to OpenAI.
	setTracingDisabled(true);
});

async function start(): Promise<string> {
	answeredBy = [];
	server = await startServer({
		// One run per key: a run left waiting for its tool result would refuse the follow-up (429).
		config: { apiKeys: [KEY], maxRunsPerKey: 1 },
	});
	return `${server.url}/openai/v1`;
}

/** The key's one session, idle with nothing waiting, and the requests it served. */
async function expectOneIdleSession(requests: number): Promise<void> {
	const list = await server.request("GET", "/v1/sessions", { key: KEY });
	expect(list.body.sessions).toHaveLength(1);
	const id = list.body.sessions[0].id as string;
	expect(answeredBy).toEqual(Array.from({ length: requests }, () => id));
	const session = await server.request("GET", `/v1/sessions/${id}`, { key: KEY });
	expect(session.body.status).toBe("idle");
	expect(session.body.pendingClientToolCalls ?? []).toEqual([]);
	const transcript = await server.request("GET", `/v1/sessions/${id}/messages`, { key: KEY });
	expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
		"user",
		"assistant",
		"toolResult",
		"assistant",
	]);
	expect(transcript.body.messages[2].content[0].text).toContain("teal");
}

describe("tool round trips of real client libraries reach the waiting run", () => {
	it("AI SDK generateText with the Responses provider", async () => {
		const openai = createOpenAI({ apiKey: KEY, baseURL: await start(), fetch: recordingFetch });
		const result = await generateText({
			model: openai.responses("faux/echo"),
			prompt: PROMPT,
			tools: {
				pick_color: tool({
					description: DESCRIPTION,
					inputSchema: z.object({ question: z.string() }),
					execute: async () => "teal",
				}),
			},
			stopWhen: stepCountIs(3),
			maxRetries: 0,
		});
		expect(result.steps).toHaveLength(2);
		expect(result.text).toContain("teal");
		await expectOneIdleSession(2);
	});

	it("AI SDK streamText with the Responses provider", async () => {
		const openai = createOpenAI({ apiKey: KEY, baseURL: await start(), fetch: recordingFetch });
		const result = streamText({
			model: openai.responses("faux/echo"),
			prompt: PROMPT,
			tools: {
				pick_color: tool({
					description: DESCRIPTION,
					inputSchema: z.object({ question: z.string() }),
					execute: async () => "teal",
				}),
			},
			stopWhen: stepCountIs(3),
			maxRetries: 0,
		});
		expect(await result.text).toContain("teal");
		expect(await result.steps).toHaveLength(2);
		await expectOneIdleSession(2);
	});

	it("AI SDK generateText with Chat Completions", async () => {
		const openai = createOpenAI({ apiKey: KEY, baseURL: await start(), fetch: recordingFetch });
		const result = await generateText({
			model: openai.chat("faux/echo"),
			prompt: PROMPT,
			tools: {
				pick_color: tool({
					description: DESCRIPTION,
					inputSchema: z.object({ question: z.string() }),
					execute: async () => "teal",
				}),
			},
			stopWhen: stepCountIs(3),
			maxRetries: 0,
		});
		expect(result.text).toContain("teal");
		await expectOneIdleSession(2);
	});

	it("LangChain ChatOpenAI with useResponsesApi: invoke, ToolMessage, invoke with the whole history", async () => {
		const baseURL = await start();
		const model = new ChatOpenAI({
			model: "faux/echo",
			apiKey: KEY,
			configuration: { baseURL, fetch: recordingFetch },
			useResponsesApi: true,
			maxRetries: 0,
		}).bindTools([
			{
				type: "function",
				function: {
					name: "pick_color",
					description: DESCRIPTION,
					parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
				},
			},
		]);
		const history: (HumanMessage | AIMessage | ToolMessage)[] = [new HumanMessage(PROMPT)];
		const ai = await model.invoke(history);
		expect(ai.tool_calls?.map((call) => call.name)).toEqual(["pick_color"]);
		history.push(ai);
		for (const call of ai.tool_calls ?? [])
			history.push(new ToolMessage({ content: "teal", tool_call_id: call.id ?? "" }));
		const final = await model.invoke(history);
		expect(final.text).toContain("teal");
		await expectOneIdleSession(2);
	});

	it("OpenAI Agents SDK: an Agent with a function tool, run() on an OpenAIResponsesModel", async () => {
		const client = new OpenAI({ apiKey: KEY, baseURL: await start(), maxRetries: 0, fetch: recordingFetch });
		const agent = new Agent({
			name: "picker",
			instructions: "Ask the user for a color.",
			model: new OpenAIResponsesModel(client, "faux/echo"),
			tools: [
				agentTool({
					name: "pick_color",
					description: DESCRIPTION,
					parameters: z.object({ question: z.string() }),
					execute: async () => "teal",
				}),
			],
		});
		const result = await run(agent, PROMPT);
		expect(result.finalOutput).toContain("teal");
		await expectOneIdleSession(2);
	});
});
