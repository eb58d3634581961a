import type { StreamResponse } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import {
	a2aClient,
	answerOf,
	assemble,
	chunkOf,
	collect,
	eventIdOf,
	stateOf,
	TaskState,
	userMessage,
} from "../../helpers/a2a.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "key-one-0123456789";
const OTHER = "key-two-0123456789";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

async function start(config: Record<string, unknown> = {}): Promise<void> {
	server = await startServer({
		config: { apiKeys: [KEY, OTHER], tools: { approval: { calculate: "always" } }, ...config },
	});
}

const sessionOf = (task: { metadata?: Record<string, any> }) => task.metadata?.wheelhouse?.sessionId as string;

describe("A2A v1 facade with the @a2a-js/sdk client", () => {
	it("serves the card without a key and refuses JSON-RPC without one", async () => {
		await start({ profiles: { helper: { model: "faux/echo", systemPrompt: "Helps with things.\nMore." } } });
		const card = await server.request("GET", "/.well-known/agent-card.json");
		expect(card.status).toBe(200);
		expect(card.body.supportedInterfaces).toEqual([
			{ url: `${server.url}/a2a/v1`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
		]);
		expect(card.body.capabilities.streaming).toBe(true);
		expect(card.body.skills).toEqual([
			{ id: "helper", name: "helper", description: "Helps with things.", tags: ["profile"] },
		]);
		expect(card.body.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe("Bearer");
		const anonymous = await server.request("POST", "/a2a/v1", {
			body: { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } },
		});
		expect(anonymous.status).toBe(401);
	});

	it("streams a task to completed; the next message in the context lands in the same session", async () => {
		await start();
		const client = await a2aClient(server.url, KEY);
		const events = await collect(client.sendMessageStream({ message: userMessage(["hello there friend"]) } as never));
		expect(events[0]!.payload?.$case).toBe("task");
		const task = events[0]!.payload!.value as { id: string; contextId: string; metadata?: Record<string, any> };
		expect(stateOf(events.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(events.map(chunkOf).join("")).toBe("hello there friend");
		const chunks = events.filter((e) => e.payload?.$case === "artifactUpdate");
		expect(chunks.length).toBeGreaterThan(1);
		// Every streamed response names its event id; they only grow.
		const ids = events.map(eventIdOf);
		expect(ids.every((id, i) => Number.isInteger(id) && (i === 0 || id >= ids[i - 1]!))).toBe(true);

		const second = await client.sendMessage({
			message: userMessage(["second turn"], { contextId: task.contextId }),
		} as never);
		expect(second).toMatchObject({ contextId: task.contextId });
		const secondTask = second as { id: string; status?: { state: number } };
		expect(secondTask.id).not.toBe(task.id);
		expect(secondTask.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(answerOf(second as never)).toBe("second turn");

		const sessionId = sessionOf(task);
		const transcript = await server.request("GET", `/v1/sessions/${sessionId}/messages`, { key: KEY });
		const users = transcript.body.messages.filter((m: { role: string }) => m.role === "user");
		expect(users.map((m: { content: { text: string }[] }) => m.content[0]!.text)).toEqual([
			"hello there friend",
			"second turn",
		]);

		const fetched = await client.getTask({ id: task.id } as never);
		expect([fetched.status?.state, answerOf(fetched)]).toEqual([TaskState.TASK_STATE_COMPLETED, "hello there friend"]);
		const listed = await client.listTasks({
			contextId: task.contextId,
			status: TaskState.TASK_STATE_UNSPECIFIED,
		} as never);
		expect(listed.tasks.map((t) => t.id)).toEqual([secondTask.id, task.id]);

		// Another key sees neither the task nor the context.
		const other = await a2aClient(server.url, OTHER);
		await expect(other.getTask({ id: task.id } as never)).rejects.toMatchObject({ name: "TaskNotFoundError" });
		expect(
			(await other.listTasks({ contextId: task.contextId, status: TaskState.TASK_STATE_UNSPECIFIED } as never)).tasks,
		).toEqual([]);
	});

	it("an approval puts the task in input-required; the reply with the decision resumes it", async () => {
		await start();
		const client = await a2aClient(server.url, KEY);
		const first = await collect(
			client.sendMessageStream({ message: userMessage(['/tool calculate {"expression": "6 * 7"}']) } as never),
		);
		const last = first.at(-1)!;
		expect(stateOf(last)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
		const task = first[0]!.payload!.value as { id: string; contextId: string };
		const status = (
			last.payload!.value as { status: { message: { parts: { content: { $case: string; value: any } }[] } } }
		).status;
		const asked = status.message.parts.find((p) => p.content.$case === "data")!.content.value;
		expect(asked).toMatchObject({ kind: "approval", toolName: "calculate", args: { expression: "6 * 7" } });
		expect((await client.getTask({ id: task.id } as never)).status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

		const resumed = await collect(
			client.sendMessageStream({
				message: userMessage([{ approve: true }], { taskId: task.id, contextId: task.contextId }),
			} as never),
		);
		expect(resumed[0]!.payload?.$case).toBe("task");
		expect((resumed[0]!.payload!.value as { id: string }).id).toBe(task.id);
		expect(stateOf(resumed[0]!)).toBe(TaskState.TASK_STATE_WORKING);
		expect(stateOf(resumed.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(resumed.map(chunkOf).join("")).toContain("42");

		// Blocking sends, and a plain "no" as the answer.
		// A blocking send answers once the task waits for input.
		const deniedTask = (await client.sendMessage({
			message: userMessage(['/tool calculate {"expression": "1 + 1"}']),
		} as never)) as { id: string; status?: { state: number } };
		expect(deniedTask.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
		const done = await client.sendMessage({
			message: userMessage(["no, not now"], { taskId: deniedTask.id }),
		} as never);
		expect((done as { status?: { state: number } }).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
		expect(answerOf(done as never)).toContain("no, not now");
		// A finished task takes no more messages.
		await expect(
			client.sendMessage({ message: userMessage(["more"], { taskId: deniedTask.id }) } as never),
		).rejects.toMatchObject({ name: "UnsupportedOperationError" });
	});

	it("cancel aborts the run; the session shows it aborted", async () => {
		await start({ fauxDelayMs: 40 });
		const client = await a2aClient(server.url, KEY);
		const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
		const stream = client.sendMessageStream({ message: userMessage([words]) } as never);
		const seen: StreamResponse[] = [];
		for await (const event of stream) {
			seen.push(event);
			if (seen.filter((e) => e.payload?.$case === "artifactUpdate").length === 2) break;
		}
		const task = seen[0]!.payload!.value as { id: string; metadata?: Record<string, any> };
		const canceled = await client.cancelTask({ id: task.id } as never);
		expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
		const messages = (await server.request("GET", `/v1/sessions/${sessionOf(task)}/messages`, { key: KEY })).body
			.messages;
		expect(messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "aborted" });
		await expect(client.cancelTask({ id: task.id } as never)).rejects.toMatchObject({ name: "TaskNotCancelableError" });
	});

	it("resubscribe: the task first, then live, no chunk twice (with and without Last-Event-ID)", async () => {
		await start({ fauxDelayMs: 15 });
		const client = await a2aClient(server.url, KEY);
		const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
		const controller = new AbortController();
		const before: StreamResponse[] = [];
		try {
			for await (const event of client.sendMessageStream({ message: userMessage([words]) } as never, {
				signal: controller.signal,
			})) {
				before.push(event);
				if (before.filter((e) => e.payload?.$case === "artifactUpdate").length === 5) controller.abort();
			}
		} catch {
			// the client went away on purpose
		}
		const task = before[0]!.payload!.value as { id: string };
		const cursor = eventIdOf(before.at(-1)!);

		// Without a cursor: a second watcher gets the task as it stands, then what follows.
		const watcher = collect(client.resubscribeTask({ id: task.id } as never));
		const resumed = await collect(
			client.resubscribeTask({ id: task.id } as never, { serviceParameters: { "Last-Event-ID": String(cursor) } }),
		);
		expect(resumed[0]!.payload?.$case).toBe("task");
		expect(eventIdOf(resumed[0]!)).toBe(cursor);
		expect(stateOf(resumed.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
		const text = before.map(chunkOf).join("") + resumed.slice(1).map(chunkOf).join("");
		expect(text).toBe(words);
		expect(assemble(resumed.slice(1), assemble(before))).toBe(words);

		const watched = await watcher;
		expect(watched[0]!.payload?.$case).toBe("task");
		expect(answerOf(watched[0]!.payload!.value as never) + watched.slice(1).map(chunkOf).join("")).toBe(words);
	});

	it("the key's run limit applies: a second task while one runs is refused with TOO_MANY_RUNS", async () => {
		await start({ fauxDelayMs: 40, maxRunsPerKey: 1 });
		const client = await a2aClient(server.url, KEY);
		const words = Array.from({ length: 100 }, (_, i) => `w${i}`).join(" ");
		const first = await client.sendMessage({
			message: userMessage([words]),
			configuration: { returnImmediately: true, acceptedOutputModes: [] },
		} as never);
		expect((first as { status?: { state: number } }).status?.state).toBe(TaskState.TASK_STATE_WORKING);
		const refused = await client.sendMessage({ message: userMessage(["another"]) } as never).catch((err) => err);
		expect(refused).toMatchObject({ data: { code: "TOO_MANY_RUNS", status: 429 } });
		await client.cancelTask({ id: (first as { id: string }).id } as never);
	});

	it("a task's history and answer are its own run's, also with a /v1 run after it in the session", async () => {
		await start();
		const client = await a2aClient(server.url, KEY);
		const task = (await client.sendMessage({ message: userMessage(["first answer"]) } as never)) as {
			id: string;
			metadata?: Record<string, any>;
		};
		const sessionId = sessionOf(task);
		const prompt = await server.request("POST", `/v1/sessions/${sessionId}/prompt`, {
			key: KEY,
			body: { message: "native turn" },
		});
		expect(prompt.status).toBe(202);
		const deadline = Date.now() + 10_000;
		while (Date.now() < deadline) {
			const state = (await server.request("GET", `/v1/sessions/${sessionId}`, { key: KEY })).body;
			if (state.status === "idle" && state.messageCount === 4) break;
			await new Promise((resolve) => setTimeout(resolve, 20));
		}
		const fetched = await client.getTask({ id: task.id } as never);
		expect(answerOf(fetched)).toBe("first answer");
		expect(
			fetched.history.map((m) => m.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("")),
		).toEqual(["first answer", "first answer"]);
	});
});
