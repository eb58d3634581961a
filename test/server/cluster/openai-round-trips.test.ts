/**
 * Two replica processes on one PostgreSQL schema and one Redis prefix: a client tool round trip
 * through the OpenAI facade whose follow-up (the tool's result) lands on the replica that does not
 * run the waiting run. The result reaches that run (through the cluster, as the `/v1` tool-results
 * route sends it), the follow-up is answered from the same session, and nothing is left waiting.
 * The client is the unmodified AI SDK, its requests sent to the replicas in turn.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, tool } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	testCluster,
	waitUntil,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";

const ok = await haveClusterServices();
const cluster = testCluster("openai-round-trips");
const T = 60_000;
const PROMPT = '/tool pick_color {"question":"favourite?"}';

describe.skipIf(!ok)("cluster: OpenAI facade tool round trips across replicas", () => {
	let A: Replica;
	let B: Replica;
	beforeAll(async () => {
		[A, B] = (await cluster.start(2, { fauxDelayMs: 5 })) as [Replica, Replica];
	}, T);
	afterAll(() => stopAll());

	/** A `fetch` that sends each request to the next replica (A, B, A, ...) and notes which session answered. */
	function alternating(answeredBy: string[]): typeof fetch {
		let n = 0;
		return async (input, init) => {
			const target = [A, B][n++ % 2] as Replica;
			const url = String(input instanceof Request ? input.url : input).replace(A.url, target.url);
			const response = await fetch(url, init);
			const id = response.headers.get("x-wheelhouse-session-id");
			if (id) answeredBy.push(id);
			return response;
		};
	}

	async function expectIdleOnBoth(id: string): Promise<void> {
		for (const replica of [A, B]) {
			const state = await waitUntil(`session ${id} idle on ${replica.name}`, async () => {
				const res = await json(`${replica.url}/v1/sessions/${id}`);
				return res.body?.status === "idle" ? res.body : undefined;
			});
			expect(state.pendingClientToolCalls ?? []).toEqual([]);
		}
		const transcript = await json(`${A.url}/v1/sessions/${id}/messages`);
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
			"user",
			"assistant",
			"toolResult",
			"assistant",
		]);
	}

	it(
		"AI SDK (Responses): the function call on A, its output on B, answered by the same session",
		async () => {
			const answeredBy: string[] = [];
			const openai = createOpenAI({ apiKey: "none", baseURL: `${A.url}/openai/v1`, fetch: alternating(answeredBy) });
			const result = await generateText({
				model: openai.responses("faux/echo"),
				prompt: PROMPT,
				tools: {
					pick_color: tool({
						description: "Ask the user to pick a color",
						inputSchema: z.object({ question: z.string() }),
						execute: async () => "teal",
					}),
				},
				stopWhen: stepCountIs(3),
				maxRetries: 0,
			});
			expect(result.text).toContain("teal");
			expect(answeredBy).toHaveLength(2);
			expect(answeredBy[1]).toBe(answeredBy[0]);
			await expectIdleOnBoth(answeredBy[0] as string);
		},
		T,
	);

	it(
		"Chat Completions, streamed: the tool calls on A, the tool message on B",
		async () => {
			const answeredBy: string[] = [];
			const client = new OpenAI({
				apiKey: "none",
				baseURL: `${A.url}/openai/v1`,
				maxRetries: 0,
				fetch: alternating(answeredBy),
			});
			const tools = [
				{
					type: "function" as const,
					function: { name: "pick_color", parameters: { type: "object", properties: {} } },
				},
			];
			const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: PROMPT }];
			const first = await client.chat.completions.create({ model: "faux/echo", messages, tools });
			const calls = first.choices[0]?.message.tool_calls ?? [];
			expect(calls).toHaveLength(1);
			messages.push(first.choices[0]!.message);
			for (const call of calls) messages.push({ role: "tool", tool_call_id: call.id, content: "teal" });
			const stream = await client.chat.completions.create({ model: "faux/echo", messages, tools, stream: true });
			let text = "";
			for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
			expect(text).toContain("teal");
			expect(answeredBy[1]).toBe(answeredBy[0]);
			await expectIdleOnBoth(answeredBy[0] as string);
		},
		T,
	);

	it(
		"Responses with previous_response_id: the output sent to B reaches the run on A; B and A both serve GET /responses/:id",
		async () => {
			const answeredBy: string[] = [];
			const client = new OpenAI({
				apiKey: "none",
				baseURL: `${A.url}/openai/v1`,
				maxRetries: 0,
				fetch: alternating(answeredBy),
			});
			const tools = [{ type: "function" as const, name: "pick_color", parameters: { type: "object" }, strict: false }];
			const first = await client.responses.create({ model: "faux/echo", input: PROMPT, tools });
			const call = first.output.find((item) => item.type === "function_call");
			if (call?.type !== "function_call") throw new Error("expected a function call");
			const second = await client.responses.create({
				model: "faux/echo",
				previous_response_id: first.id,
				input: [{ type: "function_call_output", call_id: call.call_id, output: "teal" }],
				tools,
			});
			expect(second.output_text).toContain("teal");
			expect(answeredBy[1]).toBe(answeredBy[0]);
			await expectIdleOnBoth(answeredBy[0] as string);
			// Stored responses: the first (answered by A) and the second (answered by B), read on both.
			for (const replica of [A, B]) {
				expect((await json(`${replica.url}/openai/v1/responses/${first.id}`)).body.output).toEqual(first.output);
				const got = await json(`${replica.url}/openai/v1/responses/${second.id}`);
				expect(JSON.stringify(got.body.output)).toContain("teal");
			}
		},
		T,
	);

	it(
		"cancel on B of a response whose run waits on A for its function call outputs aborts that run",
		async () => {
			const tools = [{ type: "function" as const, name: "pick_color", parameters: { type: "object" }, strict: false }];
			const onA = new OpenAI({ apiKey: "none", baseURL: `${A.url}/openai/v1`, maxRetries: 0 });
			const onB = new OpenAI({ apiKey: "none", baseURL: `${B.url}/openai/v1`, maxRetries: 0 });
			const first = await onA.responses.create({ model: "faux/echo", input: PROMPT, tools });
			const call = first.output.find((item) => item.type === "function_call");
			if (call?.type !== "function_call") throw new Error("expected a function call");
			const sessionId = `ses_${first.id.split("_")[1]}`;
			expect((await json(`${B.url}/v1/sessions/${sessionId}`)).body.status).toBe("running");

			const cancelled = await onB.responses.cancel(first.id);
			expect(cancelled.status).toBe("cancelled");
			expect((await json(`${A.url}/v1/sessions/${sessionId}`)).body.status).toBe("idle");
			expect((await onA.responses.retrieve(first.id)).status).toBe("cancelled");
			const late = await onA.responses
				.create({
					model: "faux/echo",
					previous_response_id: first.id,
					input: [{ type: "function_call_output", call_id: call.call_id, output: "teal" }],
				})
				.catch((e: unknown) => e);
			expect(late).toBeInstanceOf(OpenAI.ConflictError);
			expect((late as Error).message).toContain("was cancelled");
		},
		T,
	);
});

describe.skipIf(ok)("cluster: OpenAI facade tool round trips across replicas (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
