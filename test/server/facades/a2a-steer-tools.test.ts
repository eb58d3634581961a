/**
 * The A2A facade's messages to a task at work and its waits for input, with the `@a2a-js/sdk`
 * client against a real server: a message to a working task (by its id, or to its context without
 * one) is steered into the same run (after the tool batch, before the next model call; one task,
 * one run); a client tool declared for the session puts the task in `input-required` and a data
 * part with the call's result resumes the same task, whose answer uses it; a request's
 * `metadata.profile` (or the message's) makes the new context's session from that profile.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { StreamResponse } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { a2aClient, answerOf, collect, stateOf, TaskState, userMessage } from "../../helpers/a2a.js";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "key-steer-0123456789";
let server: TestServer | undefined;
let gate: GateTool | undefined;
afterEach(async () => {
	gate?.release();
	await server?.close();
	server = undefined;
	gate = undefined;
});

type TaskLike = { id: string; contextId: string; status?: { state: number }; metadata?: Record<string, any> };

const sessionOf = (task: { metadata?: Record<string, any> }) => task.metadata?.wheelhouse?.sessionId as string;

async function startWithGate(config: Record<string, unknown> = {}): Promise<TestServer> {
	gate = createGateTool();
	server = await startServer({ tools: [gate.tool], config: { apiKeys: [KEY], ...config } });
	return server;
}

async function sessionState(id: string): Promise<Record<string, any>> {
	const res = await server!.request("GET", `/v1/sessions/${id}`, { key: KEY });
	expect(res.status).toBe(200);
	return res.body;
}

/** The transcript as `role: text` lines (a tool call as `assistant: toolCall <name>`). */
async function transcriptLines(id: string): Promise<string[]> {
	const res = await server!.request("GET", `/v1/sessions/${id}/messages?limit=1000`, { key: KEY });
	expect(res.status).toBe(200);
	return res.body.messages.map((m: { role: string; content: any }) => {
		const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
		const text = blocks
			.map((b: { type: string; text?: string; name?: string }) =>
				b.type === "toolCall" ? `toolCall ${b.name}` : b.text,
			)
			.join("");
		return `${m.role}: ${text}`;
	});
}

/** Polls until `check` holds (the run goes on in the background). */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		if (await check()) return;
		await new Promise((resolve) => setTimeout(resolve, 25));
	}
	throw new Error(`timed out waiting for ${what}`);
}

/** The transcript of a run whose tool call was steered: the steer comes before the model's next answer. */
const STEERED = [
	"user: /tool wait_for_gate {}",
	"assistant: toolCall wait_for_gate",
	"toolResult: tool finished",
	"user: change of plan",
	"assistant: change of plan",
];

describe("A2A: messages to a task at work", () => {
	it("a message with the working task's id is steered into its run: the same task, one run", async () => {
		await startWithGate();
		const client = await a2aClient(server!.url, KEY);
		const task = (await client.sendMessage({
			message: userMessage(["/tool wait_for_gate {}"]),
			configuration: { returnImmediately: true, acceptedOutputModes: [] },
		} as never)) as TaskLike;
		expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING);
		await gate!.started();
		const sessionId = sessionOf(task);

		const steered = (await client.sendMessage({
			message: userMessage(["change of plan"], { taskId: task.id, contextId: task.contextId }),
			configuration: { returnImmediately: true, acceptedOutputModes: [] },
		} as never)) as TaskLike;
		expect(steered.id).toBe(task.id);
		expect(steered.status?.state).toBe(TaskState.TASK_STATE_WORKING);
		// Queued as steering (not as a follow-up) while the tool still runs.
		const queued = await sessionState(sessionId);
		expect(queued.queue.steeringCount).toBe(1);
		expect(queued.queue.followUpCount ?? 0).toBe(0);
		expect(queued.queue.steering[0].message.content[0].text).toBe("change of plan");

		// Watch the task to its end from here.
		const rest = collect(client.resubscribeTask({ id: task.id } as never));
		gate!.release("tool finished");
		const events = await rest;
		expect(stateOf(events.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(events.filter((e) => stateOf(e) === TaskState.TASK_STATE_COMPLETED)).toHaveLength(1);

		// Steering: the message went in right after the tool batch, and the model's one next call
		// answered it (a follow-up would have come after "Tool results: ...").
		await until(async () => (await sessionState(sessionId)).status === "idle", "the session to be idle");
		expect(await transcriptLines(sessionId)).toEqual(STEERED);
		const done = await client.getTask({ id: task.id } as never);
		expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(answerOf(done)).toBe("change of plan");
		const listed = await client.listTasks({
			contextId: task.contextId,
			status: TaskState.TASK_STATE_UNSPECIFIED,
		} as never);
		expect(listed.tasks.map((t) => t.id)).toEqual([task.id]);
		expect(gate!.calls).toBe(1);
	});

	it("a message to the context (no taskId) while its task works is steered into that task", async () => {
		await startWithGate();
		const client = await a2aClient(server!.url, KEY);
		const stream = client.sendMessageStream({ message: userMessage(["/tool wait_for_gate {}"]) } as never);
		const events = collect(stream);
		await gate!.started();
		const sessions = server!.app.wheelhouse.sessions;
		// The session the stream's task runs in: the only one of this key.
		const listed = await server!.request("GET", "/v1/sessions", { key: KEY });
		const sessionId = listed.body.sessions[0].id as string;
		expect(sessions.inMemory(sessionId)?.isBusy).toBe(true);

		const steered = (await client.sendMessage({
			message: userMessage(["change of plan"], { contextId: sessionId }),
			configuration: { returnImmediately: true, acceptedOutputModes: [] },
		} as never)) as TaskLike;
		expect((await sessionState(sessionId)).queue.steeringCount).toBe(1);
		gate!.release("tool finished");
		const all = await events;
		const task = all[0]!.payload!.value as TaskLike;
		expect(steered.id).toBe(task.id);
		expect(stateOf(all.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
		await until(async () => (await sessionState(sessionId)).status === "idle", "the session to be idle");
		expect(await transcriptLines(sessionId)).toEqual(STEERED);
		const tasks = await client.listTasks({ contextId: sessionId, status: TaskState.TASK_STATE_UNSPECIFIED } as never);
		expect(tasks.tasks.map((t) => t.id)).toEqual([task.id]);
	});
});

describe("A2A: a client tool's call waits for input", () => {
	it("puts the task in input-required; a data part with the result resumes the same task, which uses it", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const created = await server.request("POST", "/v1/sessions", {
			key: KEY,
			body: {
				clientTools: [
					{
						name: "pick_color",
						description: "Ask the user to pick a color",
						parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
					},
				],
			},
		});
		expect(created.status).toBe(201);
		const sessionId = created.body.id as string;
		const client = await a2aClient(server.url, KEY);

		// A context id that is a session id is that session (with its client tools).
		const first = await collect(
			client.sendMessageStream({
				message: userMessage(['/tool pick_color {"question": "Favourite?"}'], { contextId: sessionId }),
			} as never),
		);
		const task = first[0]!.payload!.value as TaskLike;
		expect(task.contextId).toBe(sessionId);
		const last = first.at(-1)!;
		expect(stateOf(last)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
		const status = (
			last.payload!.value as { status: { message: { parts: { content: { $case: string; value: any } }[] } } }
		).status;
		const asked = status.message.parts.find((p) => p.content.$case === "data")!.content.value;
		expect(asked).toMatchObject({ kind: "client_tool", toolName: "pick_color", args: { question: "Favourite?" } });
		const pending = (await sessionState(sessionId)).pendingClientToolCalls;
		expect(pending.map((p: { toolCallId: string }) => p.toolCallId)).toEqual([asked.toolCallId]);
		const waiting = await client.getTask({ id: task.id } as never);
		expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
		// A watcher that comes now is told the same, and its stream ends there too.
		const watched = await collect(client.resubscribeTask({ id: task.id } as never));
		expect(stateOf(watched.at(-1)!)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

		// A reply without the result is refused and leaves the call waiting.
		await expect(
			client.sendMessage({ message: userMessage(["teal"], { taskId: task.id }) } as never),
		).rejects.toMatchObject({ envelopeCode: -32602 });

		const resumed = await collect(
			client.sendMessageStream({
				message: userMessage([{ toolCallId: asked.toolCallId, result: "teal", isError: false }], {
					taskId: task.id,
					contextId: sessionId,
				}),
			} as never),
		);
		expect((resumed[0]!.payload!.value as TaskLike).id).toBe(task.id);
		expect(stateOf(resumed.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
		const done = await client.getTask({ id: task.id } as never);
		expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		// The echo model answers with the tool's result: the client's result reached the model.
		expect(answerOf(done)).toBe("Tool results: pick_color: teal");
		expect((await sessionState(sessionId)).pendingClientToolCalls).toEqual([]);
		const messages = (await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY })).body.messages;
		const result = messages.find((m: { role: string }) => m.role === "toolResult");
		expect(result).toMatchObject({
			toolCallId: asked.toolCallId,
			toolName: "pick_color",
			isError: false,
			content: [{ type: "text", text: "teal" }],
		});
		const tasks = await client.listTasks({ contextId: sessionId, status: TaskState.TASK_STATE_UNSPECIFIED } as never);
		expect(tasks.tasks.map((t) => t.id)).toEqual([task.id]);

		// A blocking send answers once the task waits for the client tool, and the reply completes it.
		const blocking = (await client.sendMessage({
			message: userMessage(['/tool pick_color {"question": "Second?"}'], { contextId: sessionId }),
		} as never)) as TaskLike & { status?: { message?: { parts: { content: { $case: string; value: any } }[] } } };
		expect(blocking.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
		const call = blocking.status!.message!.parts.find((p) => p.content.$case === "data")!.content.value;
		expect(call).toMatchObject({ kind: "client_tool", toolName: "pick_color", args: { question: "Second?" } });
		const answered = await client.sendMessage({
			message: userMessage([{ toolCallId: call.toolCallId, result: { color: "red" } }], { taskId: blocking.id }),
		} as never);
		expect((answered as TaskLike).id).toBe(blocking.id);
		expect((answered as TaskLike).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(answerOf(answered as never)).toBe('Tool results: pick_color: {"color":"red"}');
	});
});

describe("A2A: a client tool's wait on a task stream", () => {
	it("reports input-required as soon as the call waits, not at the stream's next check of the store; its end makes the task work again", async () => {
		// A heartbeat (and so a re-read of the log) far beyond the test: only the event can tell the stream.
		gate = createGateTool();
		server = await startServer({ tools: [gate.tool], config: { apiKeys: [KEY], heartbeatMs: 60_000 } });
		const created = await server.request("POST", "/v1/sessions", {
			key: KEY,
			body: { toolExecution: "sequential", clientTools: [{ name: "pick_color", description: "Ask for a color" }] },
		});
		expect(created.status).toBe(201);
		const sessionId = created.body.id as string;
		const client = await a2aClient(server.url, KEY);
		// The gate holds the batch until the stream has made its first pass over the log and gone quiet.
		const batch = [
			{ name: "wait_for_gate", arguments: {} },
			{ name: "pick_color", arguments: { question: "q" } },
			{ name: "wait_for_gate", arguments: {} },
		];
		const stream = client.sendMessageStream({
			message: userMessage([`/tools ${JSON.stringify(batch)}`], { contextId: sessionId }),
		} as never);
		const received: StreamResponse[] = [];
		const read = (async () => {
			for await (const event of stream) received.push(event);
		})();
		await gate.started();
		await until(async () => received.length > 0, "the task's first frame");
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(received.map(stateOf).at(-1)).toBe(TaskState.TASK_STATE_WORKING);

		const releasedAt = Date.now();
		gate.release();
		const ended = await Promise.race([read.then(() => true), sleep(10_000).then(() => false)]);
		expect(ended, "the stream ended with the wait").toBe(true);
		expect(Date.now() - releasedAt).toBeLessThan(5000);
		const last = received.at(-1)!;
		expect(stateOf(last)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
		const status = (last.payload!.value as { status: { message: { parts: { content: { value: any } }[] } } }).status;
		const asked = status.message.parts.find((p) => typeof p.content.value === "object")!.content.value;
		expect(asked).toMatchObject({ kind: "client_tool", toolName: "pick_color", args: { question: "q" } });
		const task = received[0]!.payload!.value as TaskLike;

		// Answered over /v1: the run goes on (the second gate), and a watcher is told the task works.
		const answered = await server.request("POST", `/v1/sessions/${sessionId}/tool-results/${asked.toolCallId}`, {
			key: KEY,
			body: { content: "teal" },
		});
		expect(answered.status).toBe(200);
		await gate.started(2);
		const watchedEvents: StreamResponse[] = [];
		for await (const event of client.resubscribeTask({ id: task.id } as never)) {
			// The task as it stands comes first; the run then finishes.
			if (watchedEvents.push(event) === 1) gate.release();
		}
		expect(stateOf(watchedEvents[0]!)).toBe(TaskState.TASK_STATE_WORKING);
		expect(watchedEvents.map(stateOf)).not.toContain(TaskState.TASK_STATE_INPUT_REQUIRED);
		expect(stateOf(watchedEvents.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
	});
});

describe("A2A: a request that names a profile", () => {
	const profiles = {
		terse: {
			model: "faux/echo",
			systemPrompt: "You answer tersely.",
			tools: ["calculate"],
			thinkingLevel: "low",
			metadata: { team: "terse-team" },
		},
		chatty: { model: "faux/echo", systemPrompt: "You chat." },
	};

	it("makes the new context's session from the profile in the request's or the message's metadata", async () => {
		server = await startServer({ config: { apiKeys: [KEY], profiles } });
		const client = await a2aClient(server.url, KEY);
		const card = await server.request("GET", "/.well-known/agent-card.json");
		expect(card.body.skills.map((s: { id: string }) => s.id)).toEqual(["terse", "chatty"]);

		const viaRequest = (await client.sendMessage({
			message: userMessage(["hi terse"]),
			metadata: { profile: "terse" },
		} as never)) as TaskLike;
		expect(viaRequest.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(await sessionState(sessionOf(viaRequest))).toMatchObject({
			model: "faux/echo",
			systemPrompt: "You answer tersely.",
			thinkingLevel: "low",
			tools: ["calculate"],
			metadata: { team: "terse-team", profile: "terse", facade: "a2a" },
		});

		const viaMessage = (await client.sendMessage({
			message: { ...userMessage(["hi chatty"]), metadata: { profile: "chatty" } },
		} as never)) as TaskLike;
		const chatty = await sessionState(sessionOf(viaMessage));
		expect(chatty).toMatchObject({ systemPrompt: "You chat.", metadata: { profile: "chatty", facade: "a2a" } });
		expect(sessionOf(viaMessage)).not.toBe(sessionOf(viaRequest));

		// Without a profile: the server's defaults, no profile.
		const plain = (await client.sendMessage({ message: userMessage(["hi"]) } as never)) as TaskLike;
		expect((await sessionState(sessionOf(plain))).metadata.profile).toBeUndefined();

		// An unknown profile is refused, naming the field and the profiles there are.
		const refused = await client
			.sendMessage({ message: userMessage(["hi"]), metadata: { profile: "nope" } } as never)
			.catch((err) => err);
		expect(refused).toMatchObject({ envelopeCode: -32602 });
		expect(String(refused.message)).toContain("metadata.profile");
		expect(String(refused.message)).toContain("terse, chatty");

		// As documented: a profile named on a message to an existing context does not change its session.
		const next = (await client.sendMessage({
			message: userMessage(["again"], { contextId: viaRequest.contextId }),
			metadata: { profile: "chatty" },
		} as never)) as TaskLike;
		expect(sessionOf(next)).toBe(sessionOf(viaRequest));
		expect((await sessionState(sessionOf(next))).metadata.profile).toBe("terse");
	});
});
