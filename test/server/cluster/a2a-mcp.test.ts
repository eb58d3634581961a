/**
 * Two replica processes on one PostgreSQL schema and one Redis prefix, driven by the unmodified
 * reference clients: an A2A task started on one replica is resubscribed on the other (the task
 * first, then live, no chunk twice), read, listed and canceled there; an MCP call's cancellation,
 * or its user's answer to an elicitation (an approval, a client tool's result), that reaches the
 * other replica acts on the run; a client tool's wait on one replica is announced on the other's
 * stream (`tool_result_requested`) and answered there; an MCP task outlives the replica it started on (the last test
 * kills A).
 */
import type { StreamResponse } from "@a2a-js/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { a2aClient, assemble, collect, eventIdOf, stateOf, TaskState, userMessage } from "../../helpers/a2a.js";
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
const cluster = testCluster("a2a-mcp");
const T = 60_000;

describe.skipIf(!ok)("cluster: A2A tasks and MCP calls across replicas", () => {
	let A: Replica;
	let B: Replica;
	beforeAll(async () => {
		[A, B] = (await cluster.start(2, { fauxDelayMs: 15 })) as [Replica, Replica];
	}, T);
	afterAll(() => stopAll());

	it(
		"a stream started on A, resubscribed on B with Last-Event-ID: the task first, then live, no chunk twice",
		async () => {
			const text = words(80);
			const onA = await a2aClient(A.url);
			const controller = new AbortController();
			const before: StreamResponse[] = [];
			try {
				for await (const event of onA.sendMessageStream({ message: userMessage([text]) } as never, {
					signal: controller.signal,
				})) {
					before.push(event);
					if (before.filter((e) => e.payload?.$case === "artifactUpdate").length === 5) controller.abort();
				}
			} catch {
				// the client went away on purpose
			}
			const task = before[0]!.payload!.value as { id: string; contextId: string; metadata: any };
			const cursor = eventIdOf(before.at(-1)!);

			const onB = await a2aClient(B.url);
			const resumed = await collect(
				onB.resubscribeTask({ id: task.id } as never, { serviceParameters: { "Last-Event-ID": String(cursor) } }),
			);
			expect(resumed[0]!.payload?.$case).toBe("task");
			expect(stateOf(resumed.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
			// Applied as A2A defines `append` (the end of a message B joined halfway replaces the text).
			expect(assemble(resumed.slice(1), assemble(before))).toBe(text);

			const fetched = await onB.getTask({ id: task.id } as never);
			expect(fetched.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
			const listed = await onB.listTasks({
				contextId: task.contextId,
				status: TaskState.TASK_STATE_UNSPECIFIED,
			} as never);
			expect(listed.tasks.map((t) => t.id)).toEqual([task.id]);
		},
		T,
	);

	it(
		"a task running on A is canceled through B; the session shows the run aborted",
		async () => {
			const onA = await a2aClient(A.url);
			const started = await onA.sendMessage({
				message: userMessage([words(400)]),
				configuration: { returnImmediately: true, acceptedOutputModes: [] },
			} as never);
			const task = started as { id: string; metadata?: Record<string, any> };
			expect((started as { status?: { state: number } }).status?.state).toBe(TaskState.TASK_STATE_WORKING);
			const onB = await a2aClient(B.url);
			const canceled = await onB.cancelTask({ id: task.id } as never);
			expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
			const sessionId = task.metadata?.wheelhouse?.sessionId as string;
			const messages = (await json(`${B.url}/v1/sessions/${sessionId}/messages`)).body.messages;
			expect(messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "aborted" });
		},
		T,
	);

	it(
		"an approval asked on A is answered through B: the same task completes, streamed from B",
		async () => {
			// A session made over /v1 with an approval rule; its id is the A2A context id.
			const created = await json(`${A.url}/v1/sessions`, "POST", { toolApprovals: { calculate: "always" } });
			const contextId = created.body.id as string;
			const onA = await a2aClient(A.url);
			const asked = await collect(
				onA.sendMessageStream({
					message: userMessage(['/tool calculate {"expression": "6 * 7"}'], { contextId }),
				} as never),
			);
			expect(stateOf(asked.at(-1)!)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
			const task = asked[0]!.payload!.value as { id: string };
			const onB = await a2aClient(B.url);
			const resumed = await collect(
				onB.sendMessageStream({ message: userMessage([{ approve: true }], { taskId: task.id }) } as never),
			);
			expect((resumed[0]!.payload!.value as { id: string }).id).toBe(task.id);
			expect(stateOf(resumed.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);
			expect(assemble(resumed)).toContain("42");
		},
		T,
	);

	it(
		"an MCP call on A whose cancellation reaches B: the run on A is aborted",
		async () => {
			// The client's requests go to A; its cancellation notification to B.
			let cancelsOnB = 0;
			const routed: typeof fetch = (input, init) => {
				const body = typeof init?.body === "string" ? init.body : "";
				const target = body.includes('"notifications/cancelled"') ? B : A;
				if (target === B) cancelsOnB++;
				return fetch(String(input).replace(A.url, target.url), init);
			};
			const client = new Client({ name: "test", version: "1.0.0" });
			await client.connect(new StreamableHTTPClientTransport(new URL(`${A.url}/mcp`), { fetch: routed }));
			const controller = new AbortController();
			const call = client.callTool({ name: "agent", arguments: { message: words(400) } }, undefined, {
				signal: controller.signal,
				onprogress: () => controller.abort(),
			});
			await expect(call).rejects.toThrow();
			const last = await waitUntil("the run aborted", async () => {
				const sessions = (await json(`${A.url}/v1/sessions`)).body.sessions as { id: string }[];
				for (const { id } of sessions) {
					const state = (await json(`${A.url}/v1/sessions/${id}`)).body;
					const message = (await json(`${A.url}/v1/sessions/${id}/messages`)).body.messages.at(-1);
					if (state.metadata?.facade === "mcp" && state.status === "idle" && message?.role === "assistant")
						return message;
				}
				return undefined;
			});
			expect(last).toMatchObject({ stopReason: "aborted" });
			expect(cancelsOnB).toBe(1);
			await client.close();
		},
		T,
	);

	it(
		"an MCP elicitation asked on A and answered through B approves the call; the call completes on A",
		async () => {
			const created = await json(`${A.url}/v1/sessions`, "POST", { toolApprovals: { calculate: "always" } });
			const sessionId = created.body.id as string;
			let answersOnB = 0;
			const routed: typeof fetch = (input, init) => {
				const body = typeof init?.body === "string" ? init.body : "";
				const target = body.includes('"wh-elicit:') ? B : A;
				if (target === B) answersOnB++;
				return fetch(String(input).replace(A.url, target.url), init);
			};
			const client = new Client({ name: "test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
			client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept" as const }));
			await client.connect(new StreamableHTTPClientTransport(new URL(`${A.url}/mcp`), { fetch: routed }));
			const result = await client.callTool({
				name: "agent",
				arguments: { message: '/tool calculate {"expression": "6 * 7"}', sessionId },
			});
			expect(result.structuredContent).toMatchObject({ status: "completed", sessionId });
			expect(JSON.stringify(result.content)).toContain("42");
			expect(answersOnB).toBe(1);
			await client.close();
		},
		T,
	);

	it(
		"an MCP client tool's result asked on A and given through B reaches the run; the call completes on A with it",
		async () => {
			const pickColor = {
				name: "pick_color",
				description: "Ask the user to pick a color",
				parameters: { type: "object", properties: {} },
			};
			const created = await json(`${A.url}/v1/sessions`, "POST", { clientTools: [pickColor] });
			expect(created.status).toBe(201);
			const sessionId = created.body.id as string;
			let answersOnB = 0;
			const routed: typeof fetch = (input, init) => {
				const body = typeof init?.body === "string" ? init.body : "";
				const target = body.includes('"wh-elicit-result:') ? B : A;
				if (target === B) answersOnB++;
				return fetch(String(input).replace(A.url, target.url), init);
			};
			const client = new Client({ name: "test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
			client.setRequestHandler(ElicitRequestSchema, async () => ({
				action: "accept" as const,
				content: { result: "teal" },
			}));
			await client.connect(new StreamableHTTPClientTransport(new URL(`${A.url}/mcp`), { fetch: routed }));
			const result = await client.callTool(
				{ name: "agent", arguments: { message: "/tool pick_color {}", sessionId } },
				undefined,
				{ timeout: T },
			);
			expect(result.structuredContent).toMatchObject({ status: "completed", sessionId });
			expect(JSON.stringify(result.content)).toContain("pick_color: teal");
			expect(answersOnB).toBe(1);
			await client.close();
		},
		T,
	);

	it(
		"a client tool's wait on A is announced on B's stream once B can see it in the store, replayed there, and answered through B",
		async () => {
			const created = await json(`${A.url}/v1/sessions`, "POST", {
				clientTools: [{ name: "pick_color", description: "Ask the user to pick a color" }],
			});
			const sessionId = created.body.id as string;
			const onB = await openSse(`${B.url}/v1/sessions/${sessionId}/events`);
			try {
				await onB.waitForType("session_snapshot");
				expect(
					(await json(`${A.url}/v1/sessions/${sessionId}/prompt`, "POST", { message: "/tool pick_color {}" })).status,
				).toBe(202);
				const requested = await onB.waitForType("tool_result_requested", 20_000);
				expect(requested.data).toMatchObject({ type: "tool_result_requested", toolName: "pick_color", args: {} });
				const { toolCallId } = requested.data;
				const start = onB.events.find((e) => e.event === "tool_execution_start")!;
				expect([start.data.toolCallId, requested.id! > start.id!]).toEqual([toolCallId, true]);
				// What B read is stored: B's view of the session lists the wait.
				const onBState = (await json(`${B.url}/v1/sessions/${sessionId}`)).body;
				expect(onBState.pendingClientToolCalls).toMatchObject([{ toolCallId, toolName: "pick_color" }]);
				const replay = await openSse(`${B.url}/v1/sessions/${sessionId}/events`, {
					headers: { "last-event-id": String(requested.id! - 1) },
				});
				try {
					expect(await replay.waitForType("tool_result_requested")).toEqual(requested);
					expect(replay.events[0]).toEqual(requested);
				} finally {
					replay.close();
				}
				const answered = await json(`${B.url}/v1/sessions/${sessionId}/tool-results/${toolCallId}`, "POST", {
					content: "teal",
				});
				expect(answered.status).toBe(200);
				const end = await onB.waitFor(
					(e) => e.event === "tool_execution_end" && e.data.toolCallId === toolCallId,
					20_000,
				);
				expect(end.data.isError).toBe(false);
				await onB.waitForType("agent_end", 20_000);
			} finally {
				onB.close();
			}
		},
		T,
	);

	it(
		"an MCP task started on A is polled to completed on B across A's SIGKILL (the task is the run, taken over)",
		async () => {
			const onA = new Client({ name: "test", version: "1.0.0" });
			await onA.connect(new StreamableHTTPClientTransport(new URL(`${A.url}/mcp`)));
			const text = words(150);
			const stream = onA.experimental.tasks.callToolStream(
				{ name: "agent", arguments: { message: text } },
				CallToolResultSchema,
				{ task: { ttl: 600_000 } },
			);
			const first = await stream.next();
			const taskId = (first.value as { task: { taskId: string } }).task.taskId;
			await stream.return(undefined);
			A.child.kill("SIGKILL");
			await A.exited;

			const onB = new Client({ name: "test", version: "1.0.0" });
			await onB.connect(new StreamableHTTPClientTransport(new URL(`${B.url}/mcp`)));
			const done = await waitUntil(
				"the task completed on B",
				async () => {
					const task = await onB.experimental.tasks.getTask(taskId);
					return task.status === "completed" ? task : undefined;
				},
				30_000,
				200,
			);
			expect(done.status).toBe("completed");
			const result = await onB.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
			expect(JSON.stringify(result.content)).toContain(words(3));
			expect(result.structuredContent).toMatchObject({ status: "completed" });
			await onB.close();
		},
		T,
	);
});

describe.skipIf(ok)("cluster: A2A tasks and MCP calls across replicas (no services)", () => {
	it.skip(NO_CLUSTER_SERVICES, () => {});
});
