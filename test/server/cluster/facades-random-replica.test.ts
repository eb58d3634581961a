/**
 * The facades on three replica processes (one PostgreSQL schema, one Redis prefix) with no sticky
 * routing: every request of a client goes to a random replica, never the one its previous request
 * went to (so each follow-up crosses replicas). Client tool round trips through the Responses
 * facade (with and without `previous_response_id`, streamed and not), Chat Completions, AG-UI
 * frontend tools (with a catch-up on every replica while the run waits, and a user message sent
 * with the results), an A2A resubscribe, then the same round trips with the unmodified AI SDK,
 * LangChain and OpenAI Agents SDK. After each: every event of each stream once and in order, the
 * stored responses the same on every replica, one session and one run, idle with nothing waiting,
 * and its event log the same on every replica.
 *
 * The model is `faux/echo`: `/tool NAME {json}` makes it call NAME, and after the result it answers
 * `Tool results: ...`.
 */
import type { StreamResponse } from "@a2a-js/sdk";
import { HttpAgent } from "@ag-ui/client";
import type { BaseEvent } from "@ag-ui/core";
import { createOpenAI } from "@ai-sdk/openai";
import { type AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { Agent, tool as agentTool, OpenAIResponsesModel, run, setTracingDisabled } from "@openai/agents";
import { generateText, stepCountIs, streamText, tool } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { a2aClient, assemble, collect, eventIdOf, stateOf, TaskState, userMessage } from "../../helpers/a2a.js";
import { checkFraming, quietConsole, ReconnectingAgent, runOnce, typesOf } from "../../helpers/agui.js";
import {
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	testCluster,
	waitUntil,
	words,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";
import { openSse } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("facades-random-replica");
const T = 90_000;
const PROMPT = '/tool pick_color {"question":"favourite?"}';
const DESCRIPTION = "Ask the user to pick a color";
const RESPONSES_TOOLS = [
	{
		type: "function" as const,
		name: "pick_color",
		description: DESCRIPTION,
		parameters: { type: "object", properties: { question: { type: "string" } } },
		strict: false,
	},
];
const CHAT_TOOLS = [
	{
		type: "function" as const,
		function: {
			name: "pick_color",
			description: DESCRIPTION,
			parameters: { type: "object", properties: { question: { type: "string" } } },
		},
	},
];

const PICK_COLOR_AGUI = {
	name: "pick_color",
	description: DESCRIPTION,
	parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};
const AGUI_MODEL = { forwardedProps: { wheelhouse: { model: "faux/echo" } } };

/** Which replica each request went to, and the session that answered (when the facade names one). */
interface Hop {
	replica: string;
	path: string;
	session?: string;
}

describe.skipIf(!ok)("cluster: the facades with each request on a random replica", () => {
	let replicas: Replica[];
	let hops: Hop[];
	let sessionsBefore: Set<string>;

	beforeAll(async () => {
		setTracingDisabled(true);
		replicas = await cluster.start(3, { fauxDelayMs: 5 });
	}, T);
	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});
	beforeEach(async () => {
		hops = [];
		sessionsBefore = new Set(await sessionIds());
	});

	let last: Replica | undefined;
	/** A random replica other than the previous pick. */
	function pick(): Replica {
		const others = replicas.filter((r) => r !== last);
		last = others[Math.floor(Math.random() * others.length)]!;
		return last;
	}
	const base = () => replicas[0]!.url;

	/** A `fetch` that sends each request to a random replica (see `pick`) and notes the hop. */
	const randomFetch: typeof fetch = async (input, init) => {
		const target = pick();
		const original = input instanceof Request ? input.url : String(input);
		const url = new URL(original);
		const to = new URL(target.url);
		url.host = to.host;
		const response = input instanceof Request ? await fetch(new Request(url, input), init) : await fetch(url, init);
		const session = response.headers.get("x-wheelhouse-session-id") ?? undefined;
		hops.push({ replica: target.name, path: url.pathname, ...(session ? { session } : {}) });
		return response;
	};

	async function sessionIds(): Promise<string[]> {
		const list = await json(`${pick().url}/v1/sessions?limit=1000`);
		return list.body.sessions.map((s: { id: string }) => s.id);
	}

	/** The one session the test made (no second one). */
	async function theNewSession(): Promise<string> {
		const made = (await sessionIds()).filter((id) => !sessionsBefore.has(id));
		expect(made, "sessions the test made").toHaveLength(1);
		return made[0]!;
	}

	/**
	 * Nothing left waiting, on every replica: the session idle with empty queues and no pending
	 * call; `roles` its transcript; its event log, replayed from the start on each replica, the same
	 * everywhere, ids strictly increasing, with `runs` runs started and ended.
	 */
	async function expectSettled(id: string, roles: string[], runs = 1): Promise<void> {
		let endId = 0;
		for (const replica of replicas) {
			const state = await waitUntil(`session ${id} idle on ${replica.name}`, async () => {
				const res = await json(`${replica.url}/v1/sessions/${id}`);
				return res.body?.status === "idle" ? res.body : undefined;
			});
			expect(state.pendingClientToolCalls ?? [], `pending client calls on ${replica.name}`).toEqual([]);
			expect(state.pendingToolCalls ?? [], `pending calls on ${replica.name}`).toEqual([]);
			expect(state.queue).toMatchObject({ steeringCount: 0, followUpCount: 0 });
			endId = Math.max(endId, state.lastEventId as number);
		}
		const transcript = await json(`${pick().url}/v1/sessions/${id}/messages`);
		expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual(roles);
		let first: string[] | undefined;
		for (const replica of replicas) {
			const replay = await openSse(`${replica.url}/v1/sessions/${id}/events`, { headers: { "last-event-id": "0" } });
			await replay.waitFor((e) => (e.id ?? 0) >= endId, 20_000);
			replay.close();
			const events = replay.events.filter((e) => e.id !== undefined && e.id <= endId);
			const ids = events.map((e) => e.id as number);
			for (let i = 1; i < ids.length; i++) expect(ids[i], `event ids on ${replica.name}`).toBeGreaterThan(ids[i - 1]!);
			expect(
				events.filter((e) => e.event === "agent_start"),
				`runs started, on ${replica.name}`,
			).toHaveLength(runs);
			expect(
				events.filter((e) => e.event === "agent_end"),
				`runs ended, on ${replica.name}`,
			).toHaveLength(runs);
			const shapes = events.map((e) => `${e.id} ${e.event} ${JSON.stringify(e.data)}`);
			if (first) expect(shapes, `the log on ${replica.name}`).toEqual(first);
			else first = shapes;
		}
	}

	/** Every hop that named a session named `id`; the requests crossed replicas. */
	function expectAnsweredBy(id: string, requests: number): void {
		const named = hops.filter((h) => h.session);
		expect(
			named.map((h) => h.session),
			JSON.stringify(hops),
		).toEqual(Array.from({ length: requests }, () => id));
	}

	/** Checks a Responses event stream: sequence numbers 0..n-1, one created first and one terminal last. */
	function expectResponseStream(events: OpenAI.Responses.ResponseStreamEvent[], terminal: string): void {
		expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
		expect(events[0]?.type).toBe("response.created");
		expect(events.at(-1)?.type).toBe(terminal);
		expect(events.filter((e) => e.type === "response.created")).toHaveLength(1);
		expect(events.filter((e) => e.type === terminal)).toHaveLength(1);
		// Every output item added once and done once, in order.
		const added = events.flatMap((e) => (e.type === "response.output_item.added" ? [e.output_index] : []));
		const done = events.flatMap((e) => (e.type === "response.output_item.done" ? [e.output_index] : []));
		expect(added).toEqual(added.map((_, i) => i));
		expect(done).toEqual(added);
	}

	/** The text of a response's messages (`output_text` is the SDK's, added only to unstreamed answers). */
	function textOf(response: OpenAI.Responses.Response): string {
		return response.output
			.flatMap((item) => (item.type === "message" ? item.content : []))
			.map((part) => (part.type === "output_text" ? part.text : ""))
			.join("");
	}

	async function streamResponse(
		client: OpenAI,
		body: OpenAI.Responses.ResponseCreateParamsStreaming,
	): Promise<{ events: OpenAI.Responses.ResponseStreamEvent[]; response: OpenAI.Responses.Response }> {
		const events: OpenAI.Responses.ResponseStreamEvent[] = [];
		for await (const event of await client.responses.create(body)) events.push(event);
		const end = events.at(-1);
		if (end?.type !== "response.completed") throw new Error(`stream ended with ${end?.type}`);
		return { events, response: end.response };
	}

	/** An `HttpAgent` whose requests go to random replicas; the response bodies are kept too. */
	function randomAguiAgent(): { agent: HttpAgent; bodies: Promise<string>[] } {
		const bodies: Promise<string>[] = [];
		const agent = new HttpAgent({
			url: `${base()}/agui/v1/run`,
			fetch: async (url: string, init: RequestInit) => {
				const response = await randomFetch(url, init);
				if (!response.body) return response;
				const [forClient, forTest] = response.body.tee();
				bodies.push(new Response(forTest).text());
				return new Response(forClient, { status: response.status, headers: response.headers });
			},
		});
		return { agent, bodies };
	}

	const client = () =>
		new OpenAI({ apiKey: "none", baseURL: `${base()}/openai/v1`, maxRetries: 0, fetch: randomFetch });

	it(
		"Responses, streamed, with previous_response_id: the stored responses are the same on every replica",
		async () => {
			const openai = client();
			const first = await streamResponse(openai, {
				model: "faux/echo",
				input: PROMPT,
				tools: RESPONSES_TOOLS,
				stream: true,
			});
			expectResponseStream(first.events, "response.completed");
			const call = first.response.output.find((item) => item.type === "function_call");
			if (call?.type !== "function_call") throw new Error("expected a function call");
			const second = await streamResponse(openai, {
				model: "faux/echo",
				previous_response_id: first.response.id,
				input: [{ type: "function_call_output", call_id: call.call_id, output: "teal" }],
				tools: RESPONSES_TOOLS,
				stream: true,
			});
			expectResponseStream(second.events, "response.completed");
			expect(textOf(second.response)).toContain("teal");

			const id = await theNewSession();
			expectAnsweredBy(id, 2);
			await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);
			for (const replica of replicas) {
				for (const { response } of [first, second]) {
					const got = await json(`${replica.url}/openai/v1/responses/${response.id}`);
					expect(got.status, `GET /responses/${response.id} on ${replica.name}`).toBe(200);
					expect(got.body).toMatchObject({ id: response.id, status: "completed", output: response.output });
				}
			}
			// Through the client too (a random replica each).
			expect((await openai.responses.retrieve(second.response.id)).output).toEqual(second.response.output);
		},
		T,
	);

	it(
		"Responses without previous_response_id: the whole input again finds the waiting run",
		async () => {
			const openai = client();
			const first = await openai.responses.create({ model: "faux/echo", input: PROMPT, tools: RESPONSES_TOOLS });
			const call = first.output.find((item) => item.type === "function_call");
			if (call?.type !== "function_call") throw new Error("expected a function call");
			const second = await streamResponse(openai, {
				model: "faux/echo",
				input: [
					{ role: "user", content: PROMPT },
					{ type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
					{ type: "function_call_output", call_id: call.call_id, output: "teal" },
				],
				tools: RESPONSES_TOOLS,
				stream: true,
			});
			expectResponseStream(second.events, "response.completed");
			expect(textOf(second.response)).toContain("teal");

			const id = await theNewSession();
			expectAnsweredBy(id, 2);
			await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);
			for (const replica of replicas) {
				const got = await json(`${replica.url}/openai/v1/responses/${first.id}`);
				expect(got.body.output, `first response on ${replica.name}`).toEqual(first.output);
			}
		},
		T,
	);

	it(
		"Chat Completions: the tool calls, then the tool message streamed, each on another replica",
		async () => {
			const openai = client();
			const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: PROMPT }];
			const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
			for await (const chunk of await openai.chat.completions.create({
				model: "faux/echo",
				messages,
				tools: CHAT_TOOLS,
				stream: true,
			}))
				chunks.push(chunk);
			const finishes = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.finish_reason ?? []));
			expect(finishes).toEqual(["tool_calls"]);
			const callId = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).find((t) => t.id)?.id as string;
			const args = chunks
				.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
				.map((t) => t.function?.arguments ?? "")
				.join("");
			expect(JSON.parse(args)).toEqual({ question: "favourite?" });
			messages.push({
				role: "assistant",
				content: null,
				tool_calls: [{ id: callId, type: "function", function: { name: "pick_color", arguments: args } }],
			});
			messages.push({ role: "tool", tool_call_id: callId, content: "teal" });
			const second = await openai.chat.completions.create({ model: "faux/echo", messages, tools: CHAT_TOOLS });
			expect(second.choices[0]?.message.content).toContain("teal");
			expect(second.choices[0]?.finish_reason).toBe("stop");

			const id = await theNewSession();
			expectAnsweredBy(id, 2);
			await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);
		},
		T,
	);

	it(
		"AG-UI frontend tools: the call ends the first run, the tool message on another replica continues it",
		async () => {
			const console_ = quietConsole();
			try {
				// The helper's agent, its requests sent to random replicas (and their bodies still kept).
				const bodies: Promise<string>[] = [];
				const agent = new HttpAgent({
					url: `${base()}/agui/v1/run`,
					fetch: async (url: string, init: RequestInit) => {
						const response = await randomFetch(url, init);
						if (!response.body) return response;
						const [forClient, forTest] = response.body.tee();
						bodies.push(new Response(forTest).text());
						return new Response(forClient, { status: response.status, headers: response.headers });
					},
				});
				const pickColor = {
					name: "pick_color",
					description: DESCRIPTION,
					parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
				};
				const props = { forwardedProps: { wheelhouse: { model: "faux/echo" } } };
				agent.addMessage({ id: "u1", role: "user", content: PROMPT });
				const pending: string[][] = [];
				const first = await runOnce(
					agent,
					{ tools: [pickColor], ...props },
					{
						onRunFinishedEvent: (params) =>
							void pending.push(params.outcome === "success" ? params.pendingToolCallIds : []),
					},
				);
				const assistant = agent.messages.at(-1) as { role: string; toolCalls?: { id: string }[] };
				expect(assistant.role).toBe("assistant");
				const callId = assistant.toolCalls?.[0]?.id as string;
				expect(pending).toEqual([[callId]]);
				expect(typesOf(first.events).at(-1)).toBe("RUN_FINISHED");

				agent.addMessage({ id: "t1", role: "tool", toolCallId: callId, content: "teal" });
				const second = await runOnce(agent, { tools: [pickColor], ...props });
				expect(typesOf(second.events).slice(0, 2)).toEqual(["RUN_STARTED", "STEP_STARTED"]);
				expect(typesOf(second.events).at(-1)).toBe("RUN_FINISHED");
				expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "Tool results: pick_color: teal" });

				const meta = (events: BaseEvent[]) =>
					(events[0] as unknown as { metadata: { wheelhouse: { sessionId: string; runId: string } } }).metadata
						.wheelhouse;
				expect(meta(second.events)).toEqual(meta(first.events));
				// Each stream once, in order: what the client parsed is exactly what was sent.
				const raw = (await Promise.all(bodies)).map(checkFraming);
				expect(raw.map(typesOf)).toEqual([typesOf(first.events), typesOf(second.events)]);
				// The continued run's answer is the transcript's fourth message, under the id a local stretch gives it.
				const answer = second.events.find((e) => e.type === "TEXT_MESSAGE_START") as { messageId?: string };
				expect(answer.messageId).toBe("wh-3");
				for (const events of [first.events, second.events]) {
					const started = events.flatMap((e) =>
						e.type === "TEXT_MESSAGE_START" ? [(e as { messageId?: string }).messageId] : [],
					);
					expect(new Set(started).size).toBe(started.length);
				}

				const id = await theNewSession();
				expect(id).toBe(meta(first.events).sessionId);
				await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);

				// The client goes on with the thread (everything it has, and a new message) on another replica.
				agent.addMessage({ id: "u2", role: "user", content: "now say hi" });
				const third = await runOnce(agent, { tools: [pickColor], ...props });
				expect(typesOf(third.events).at(-1)).toBe("RUN_FINISHED");
				expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "now say hi" });
				expect(meta(third.events).sessionId).toBe(id);
				expect(meta(third.events).runId).not.toBe(meta(first.events).runId);
				await expectSettled(id, ["user", "assistant", "toolResult", "assistant", "user", "assistant"], 2);
				console_.check();
			} finally {
				console_.restore();
			}
		},
		T,
	);

	it(
		"AG-UI: a catch-up on any replica sees the calls the run waits for; the result sent with a new message continues the run",
		async () => {
			const console_ = quietConsole();
			try {
				const { agent, bodies } = randomAguiAgent();
				agent.addMessage({ id: "u1", role: "user", content: PROMPT });
				await runOnce(agent, { tools: [PICK_COLOR_AGUI], ...AGUI_MODEL });
				const callId = (agent.messages.at(-1) as { toolCalls?: { id: string }[] }).toolCalls?.[0]?.id as string;
				expect(callId).toBeTruthy();

				// Catch-ups on every replica (the one that runs the run among them): the run waits for the call.
				for (let i = 0; i < replicas.length; i++) {
					const watcher = new ReconnectingAgent(base(), {
						url: `${base()}/agui/v1/run`,
						threadId: agent.threadId,
						fetch: randomFetch as never,
					});
					const seen: BaseEvent[] = [];
					await watcher.connectAgent({}, { onEvent: ({ event }) => void seen.push(event) });
					const last = seen.at(-1) as { type: string; outcome?: { type: string; pendingToolCallIds?: string[] } };
					expect(last.type, `catch-up on ${hops.at(-1)?.replica}`).toBe("RUN_FINISHED");
					expect(last.outcome, `catch-up on ${hops.at(-1)?.replica}`).toEqual({
						type: "success",
						pendingToolCallIds: [callId],
					});
				}

				agent.addMessage({ id: "t1", role: "tool", toolCallId: callId, content: "teal" });
				agent.addMessage({ id: "u2", role: "user", content: "and say bye" });
				// Not on the replica that runs the run.
				const running = hops.find((h) => h.path.endsWith("/run"))?.replica;
				last = replicas.find((r) => r.name === running);
				await runOnce(agent, { tools: [PICK_COLOR_AGUI], ...AGUI_MODEL });
				expect(hops.at(-1)?.replica).not.toBe(running);
				for (const body of await Promise.all(bodies)) checkFraming(body);
				// Each message once on the client: its own user messages are not sent back to it. The steering
				// reached the run before the result let it go on (as on the run's own replica): one answer after both.
				expect(agent.messages.map((m) => [m.id, m.role])).toEqual([
					["u1", "user"],
					["wh-1", "assistant"],
					["t1", "tool"],
					["u2", "user"],
					["wh-4", "assistant"],
				]);
				expect(agent.messages.at(-1)).toMatchObject({ content: "and say bye" });
				await expectSettled(await theNewSession(), ["user", "assistant", "toolResult", "user", "assistant"]);
				console_.check();
			} finally {
				console_.restore();
			}
		},
		T,
	);

	it(
		"A2A: a task streamed on one replica, resubscribed on another with Last-Event-ID: every chunk once",
		async () => {
			const text = words(60);
			const sender = await a2aClient(pick().url);
			const controller = new AbortController();
			const before: StreamResponse[] = [];
			try {
				for await (const event of sender.sendMessageStream({ message: userMessage([text]) } as never, {
					signal: controller.signal,
				})) {
					before.push(event);
					if (before.filter((e) => e.payload?.$case === "artifactUpdate").length === 4) controller.abort();
				}
			} catch {
				// the client went away on purpose
			}
			const task = before[0]!.payload!.value as { id: string };
			const resumer = await a2aClient(pick().url);
			const resumed = await collect(
				resumer.resubscribeTask({ id: task.id } as never, {
					serviceParameters: { "Last-Event-ID": String(eventIdOf(before.at(-1)!)) },
				}),
			);
			expect(resumed[0]!.payload?.$case).toBe("task");
			expect(stateOf(resumed.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
			expect(assemble(resumed.slice(1), assemble(before))).toBe(text);
			const ids = [...before, ...resumed.slice(1)].map(eventIdOf).filter((n) => Number.isFinite(n) && n > 0);
			for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
			const fetched = await (await a2aClient(pick().url)).getTask({ id: task.id } as never);
			expect(fetched.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
			await expectSettled(await theNewSession(), ["user", "assistant"]);
		},
		T,
	);

	describe("unmodified client libraries, each request on a random replica", () => {
		const pickColor = () =>
			tool({
				description: DESCRIPTION,
				inputSchema: z.object({ question: z.string() }),
				execute: async () => "teal",
			});

		it(
			"AI SDK generateText with .responses()",
			async () => {
				const openai = createOpenAI({ apiKey: "none", baseURL: `${base()}/openai/v1`, fetch: randomFetch });
				const result = await generateText({
					model: openai.responses("faux/echo"),
					prompt: PROMPT,
					tools: { pick_color: pickColor() },
					stopWhen: stepCountIs(3),
					maxRetries: 0,
				});
				expect(result.steps).toHaveLength(2);
				expect(result.text).toContain("teal");
				const id = await theNewSession();
				expectAnsweredBy(id, 2);
				await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);
			},
			T,
		);

		it(
			"AI SDK streamText with .responses()",
			async () => {
				const openai = createOpenAI({ apiKey: "none", baseURL: `${base()}/openai/v1`, fetch: randomFetch });
				const result = streamText({
					model: openai.responses("faux/echo"),
					prompt: PROMPT,
					tools: { pick_color: pickColor() },
					stopWhen: stepCountIs(3),
					maxRetries: 0,
				});
				expect(await result.text).toContain("teal");
				expect(await result.steps).toHaveLength(2);
				const id = await theNewSession();
				expectAnsweredBy(id, 2);
				await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);
			},
			T,
		);

		it(
			"LangChain ChatOpenAI with useResponsesApi",
			async () => {
				const model = new ChatOpenAI({
					model: "faux/echo",
					apiKey: "none",
					configuration: { baseURL: `${base()}/openai/v1`, fetch: randomFetch },
					useResponsesApi: true,
					maxRetries: 0,
				}).bindTools(CHAT_TOOLS);
				const history: (HumanMessage | AIMessage | ToolMessage)[] = [new HumanMessage(PROMPT)];
				const ai = await model.invoke(history);
				expect(ai.tool_calls?.map((call) => call.name)).toEqual(["pick_color"]);
				history.push(ai);
				for (const call of ai.tool_calls ?? [])
					history.push(new ToolMessage({ content: "teal", tool_call_id: call.id ?? "" }));
				const final = await model.invoke(history);
				expect(final.text).toContain("teal");
				const id = await theNewSession();
				expectAnsweredBy(id, 2);
				await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);
			},
			T,
		);

		it(
			"OpenAI Agents SDK run() on an OpenAIResponsesModel",
			async () => {
				const agent = new Agent({
					name: "picker",
					instructions: "Ask the user for a color.",
					model: new OpenAIResponsesModel(client(), "faux/echo"),
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
				const id = await theNewSession();
				expectAnsweredBy(id, 2);
				await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);
			},
			T,
		);

		it(
			"OpenAI Agents SDK run() with previousResponseId: the tool round trip continues a conversation",
			async () => {
				const agent = new Agent({
					name: "picker",
					instructions: "Ask the user for a color.",
					model: new OpenAIResponsesModel(client(), "faux/echo"),
					tools: [
						agentTool({
							name: "pick_color",
							description: DESCRIPTION,
							parameters: z.object({ question: z.string() }),
							execute: async () => "teal",
						}),
					],
				});
				const hello = await run(agent, "hello");
				expect(hello.finalOutput).toContain("hello");
				const result = await run(agent, PROMPT, { previousResponseId: hello.lastResponseId });
				expect(result.finalOutput).toContain("teal");
				const id = await theNewSession();
				expectAnsweredBy(id, 3);
				await expectSettled(id, ["user", "assistant", "user", "assistant", "toolResult", "assistant"], 2);
			},
			T,
		);

		it(
			"OpenAI Agents SDK run() streamed",
			async () => {
				const agent = new Agent({
					name: "picker",
					instructions: "Ask the user for a color.",
					model: new OpenAIResponsesModel(client(), "faux/echo"),
					tools: [
						agentTool({
							name: "pick_color",
							description: DESCRIPTION,
							parameters: z.object({ question: z.string() }),
							execute: async () => "teal",
						}),
					],
				});
				const result = await run(agent, PROMPT, { stream: true });
				for await (const _ of result) {
					// drain
				}
				await result.completed;
				expect(result.finalOutput).toContain("teal");
				const id = await theNewSession();
				expectAnsweredBy(id, 2);
				await expectSettled(id, ["user", "assistant", "toolResult", "assistant"]);
			},
			T,
		);
	});
});

describe.skipIf(ok)("cluster: the facades with each request on a random replica (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
