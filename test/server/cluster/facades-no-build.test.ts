/**
 * The facades' control and reads on a replica that does not run the session go through the session
 * port and build no session there (`wheelhouse_sessions_held` stays 0 on it), on three replica
 * processes: the OpenAI Responses facade's function call output, new turn, GET and cancel for a
 * run waiting on A; `/v1`'s prompt and continue refused while the run is on A; an MCP task read
 * and cancelled on another replica; an A2A task read, answered (an approval) and cancelled on
 * another replica. A new turn refused there changes nothing of the session, as on the replica
 * running it.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { a2aClient, answerOf, TaskState, userMessage } from "../../helpers/a2a.js";
import {
	createSession,
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	testCluster,
	waitUntil,
	words,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";
import { promptSse } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("facades-no-build");
const T = 60_000;
const PROMPT = '/tool pick_color {"question":"favourite?"}';
const TOOLS = [{ type: "function" as const, name: "pick_color", parameters: { type: "object" }, strict: false }];

/** Sessions `replica` holds in memory (its `wheelhouse_sessions_held` gauge). */
async function held(replica: Replica): Promise<number> {
	const text = await (await fetch(`${replica.url}/metrics`)).text();
	const line = text.split("\n").find((l) => l.startsWith("wheelhouse_sessions_held "));
	return Number(line?.split(" ")[1]);
}

describe.skipIf(!ok)("cluster: facade requests on a replica without the run build no session", () => {
	let replicas: Replica[];

	beforeAll(async () => {
		replicas = await cluster.start(3, { fauxDelayMs: 10, env: { WHEELHOUSE_METRICS_AUTH: "none" } });
	}, T);

	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	const client = (replica: Replica) =>
		new OpenAI({ apiKey: "none", baseURL: `${replica.url}/openai/v1`, maxRetries: 0 });

	it(
		"Responses: a new turn on B is refused and changes nothing; the output on B and a cancel on C reach the run on A",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			const first = await client(A).responses.create({ model: "faux/echo", input: PROMPT, tools: TOOLS });
			const call = first.output.find((item) => item.type === "function_call");
			if (call?.type !== "function_call") throw new Error("expected a function call");
			const sessionId = `ses_${first.id.split("_")[1]}`;
			const before = (await json(`${A.url}/v1/sessions/${sessionId}`)).body;
			expect(before.status).toBe("running");

			// A new turn while the run waits on A: 409 as on A, and the session's config stays as it was.
			const turn = await json(`${B.url}/openai/v1/responses`, "POST", {
				model: "faux/echo",
				previous_response_id: first.id,
				instructions: "a new system prompt",
				input: "something else",
			});
			expect(turn.status).toBe(409);
			expect(turn.body.error.code).toBe("AGENT_BUSY");

			expect((await client(B).responses.retrieve(first.id)).output).toEqual(first.output);
			const second = await client(B).responses.create({
				model: "faux/echo",
				previous_response_id: first.id,
				input: [{ type: "function_call_output", call_id: call.call_id, output: "teal" }],
				tools: TOOLS,
			});
			expect(second.output_text).toContain("teal");
			expect(await held(B)).toBe(0);

			// Waiting again on A; cancelled through C.
			const third = await client(A).responses.create({
				model: "faux/echo",
				previous_response_id: second.id,
				input: PROMPT,
				tools: TOOLS,
			});
			expect(third.output.some((item) => item.type === "function_call")).toBe(true);
			const cancelled = await client(C).responses.cancel(third.id);
			expect(cancelled.status).toBe("cancelled");
			// Idle now: read from the store, the refused turn's instructions are not the session's.
			const after = (await json(`${A.url}/v1/sessions/${sessionId}`)).body;
			expect(after.status).toBe("idle");
			expect(after.systemPrompt).toBe(before.systemPrompt);
			expect(await held(B)).toBe(0);
			expect(await held(C)).toBe(0);
		},
		T,
	);

	it(
		"/v1: a prompt and a continue on B while the run is on A are refused without building the session",
		async () => {
			const [A, B] = replicas as [Replica, Replica, Replica];
			const id = await createSession(A);
			const run = await promptSse(A.url, id, { message: words(200) });
			await run.waitFor((e) => e.event === "message_update", T);
			const prompt = await json(`${B.url}/v1/sessions/${id}/prompt`, "POST", { message: "hi" });
			expect(prompt.status).toBe(409);
			expect(prompt.body.error.code).toBe("AGENT_BUSY");
			const resumed = await json(`${B.url}/v1/sessions/${id}/continue`, "POST", {});
			expect(resumed.status).toBe(409);
			expect(resumed.body.error.code).toBe("AGENT_BUSY");
			expect(await held(B)).toBe(0);
			await run.waitForType("agent_end", T);
		},
		T,
	);

	it(
		"MCP: a task running on A is read and cancelled on C",
		async () => {
			const [A, , C] = replicas as [Replica, Replica, Replica];
			const onA = new Client({ name: "test", version: "1.0.0" });
			await onA.connect(new StreamableHTTPClientTransport(new URL(`${A.url}/mcp`)));
			const stream = onA.experimental.tasks.callToolStream(
				{ name: "agent", arguments: { message: words(400) } },
				CallToolResultSchema,
				{ task: { ttl: 600_000 } },
			);
			const first = await stream.next();
			const taskId = (first.value as { task: { taskId: string } }).task.taskId;
			await stream.return(undefined);

			const onC = new Client({ name: "test", version: "1.0.0" });
			await onC.connect(new StreamableHTTPClientTransport(new URL(`${C.url}/mcp`)));
			await waitUntil("the task working", async () =>
				(await onC.experimental.tasks.getTask(taskId)).status === "working" ? true : undefined,
			);
			const cancelled = await onC.experimental.tasks.cancelTask(taskId);
			expect(cancelled.status).toBe("cancelled");
			expect(await held(C)).toBe(0);
			await onA.close();
			await onC.close();
		},
		T,
	);

	it(
		"A2A: a task waiting for an approval on A is read and approved on B; a task running on A is read, listed and canceled on C",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			// A session made over /v1 with an approval rule; its id is the A2A context id.
			const created = await json(`${A.url}/v1/sessions`, "POST", { toolApprovals: { calculate: "always" } });
			const contextId = created.body.id as string;
			const onA = await a2aClient(A.url);
			const asked = (await onA.sendMessage({
				message: userMessage(['/tool calculate {"expression": "6 * 7"}'], { contextId }),
			} as never)) as { id: string; status?: { state: number } };
			expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

			const onB = await a2aClient(B.url);
			const waiting = await onB.getTask({ id: asked.id } as never);
			expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
			expect(await held(B)).toBe(0);
			const approved = (await onB.sendMessage({
				message: userMessage([{ approve: true }], { taskId: asked.id }),
			} as never)) as { id: string; status?: { state: number } } & Parameters<typeof answerOf>[0];
			expect(approved.id).toBe(asked.id);
			expect(approved.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
			expect(answerOf(approved)).toContain("42");
			expect(await held(B)).toBe(0);

			const started = (await onA.sendMessage({
				message: userMessage([words(400)]),
				configuration: { returnImmediately: true, acceptedOutputModes: [] },
			} as never)) as { id: string; contextId: string; status?: { state: number } };
			expect(started.status?.state).toBe(TaskState.TASK_STATE_WORKING);
			const onC = await a2aClient(C.url);
			expect((await onC.getTask({ id: started.id } as never)).status?.state).toBe(TaskState.TASK_STATE_WORKING);
			const listed = await onC.listTasks({
				contextId: started.contextId,
				status: TaskState.TASK_STATE_UNSPECIFIED,
			} as never);
			expect(listed.tasks.map((t) => t.id)).toEqual([started.id]);
			expect(await held(C)).toBe(0);
			const canceled = await onC.cancelTask({ id: started.id } as never);
			expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
			expect(await held(C)).toBe(0);
			const session = (await json(`${A.url}/v1/sessions/${started.contextId}`)).body;
			expect(session.status).toBe("idle");
		},
		T,
	);
});

describe.skipIf(ok)("cluster: facade requests on a replica without the run build no session (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
