/**
 * `PATCH /v1/sessions/:id` on one replica applies to the session's runs on every replica: a
 * session last run on B, patched on A, runs on B (and then on A) with the new system prompt and
 * model; patched while its run waits on B, the run's next model call has the new config.
 *
 * Three replica processes on one PostgreSQL schema and Redis prefix; their models are served by a
 * local Chat Completions provider that records each call's model and system prompt.
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	createSession,
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	testCluster,
	waitUntil,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";
import { type RecordingProvider, startRecordingProvider } from "../../helpers/recording-provider.js";
import { promptSse } from "../../helpers/sse.js";

const ok = await haveClusterServices();
const cluster = testCluster("patch-any-replica");
const T = 60_000;

describe.skipIf(!ok)("cluster: a config patch on one replica, runs on the others", () => {
	let replicas: Replica[];
	let provider: RecordingProvider;

	beforeAll(async () => {
		provider = await startRecordingProvider();
		const configFile = path.join(tmpdir(), `wh-patch-any-replica-${process.pid}.json`);
		writeFileSync(
			configFile,
			JSON.stringify({
				models: ["m1", "m2"].map((id) => ({ provider: "rec", id, baseUrl: provider.baseUrl, apiKeyEnv: "REC_KEY" })),
			}),
		);
		replicas = await cluster.start(3, {
			env: { WHEELHOUSE_CONFIG: configFile, REC_KEY: "rec-key", WHEELHOUSE_DEFAULT_MODEL: "rec/m1" },
		});
	}, T);

	afterAll(async () => {
		stopAll();
		await provider?.close();
		await cluster.dropRedisKeys();
	});

	/** Runs one prompt on `replica` to its end; the model calls it made. */
	async function run(replica: Replica, id: string, message: string) {
		const before = provider.calls.length;
		// The previous run's replica gives the lease up just after its end: a claim retries meanwhile.
		const stream = await promptSse(replica.url, id, { message });
		const end = await stream.waitForType("agent_end", T);
		expect(end.data.messages.at(-1).stopReason).toBe("stop");
		return provider.calls.slice(before);
	}

	async function patch(replica: Replica, id: string, body: Record<string, unknown>) {
		const res = await json(`${replica.url}/v1/sessions/${id}`, "PATCH", body);
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		return res.body;
	}

	it(
		"a session last run on B and patched on A runs with the patch on B, then on A",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			const id = await createSession(A, { systemPrompt: "first" });
			expect(await run(B, id, "hello")).toEqual([{ model: "m1", system: "first", lastRole: "user" }]);

			const view = await patch(A, id, { systemPrompt: "second", model: "rec/m2" });
			expect(view).toMatchObject({ systemPrompt: "second", model: "rec/m2" });
			expect(await run(B, id, "again")).toEqual([{ model: "m2", system: "second", lastRole: "user" }]);

			await patch(C, id, { systemPrompt: "third" });
			expect(await run(A, id, "and again")).toEqual([{ model: "m2", system: "third", lastRole: "user" }]);
			// Every replica shows the same config.
			for (const replica of replicas) {
				const state = await json(`${replica.url}/v1/sessions/${id}`);
				expect(state.body).toMatchObject({ systemPrompt: "third", model: "rec/m2", status: "idle" });
			}
		},
		T,
	);

	it(
		"a patch on A while the run waits on B applies to the run's next model call, and to the next run on B",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			const id = await createSession(C, {
				systemPrompt: "before",
				clientTools: [{ name: "ask_user", description: "Ask the user" }],
			});
			// A run on B first, so B holds the session when the next one starts there.
			await run(B, id, "warm up");
			const before = provider.calls.length;
			const stream = await promptSse(B.url, id, { message: "/tool ask_user" });
			const call = await stream.waitFor((e) => e.event === "tool_execution_start", T);
			await patch(A, id, { systemPrompt: "during", model: "rec/m2" });
			const result = await json(`${C.url}/v1/sessions/${id}/tool-results/${call.data.toolCallId}`, "POST", {
				content: "yes",
			});
			expect(result.status).toBe(200);
			await stream.waitForType("agent_end", T);
			expect(provider.calls.slice(before)).toEqual([
				{ model: "m1", system: "before", lastRole: "user" },
				{ model: "m2", system: "during", lastRole: "tool" },
			]);
			await waitUntil("the session idle", async () =>
				(await json(`${A.url}/v1/sessions/${id}`)).body.status === "idle" ? true : undefined,
			);
			await patch(A, id, { systemPrompt: "after" });
			expect(await run(B, id, "next")).toEqual([{ model: "m2", system: "after", lastRole: "user" }]);
		},
		T,
	);

	it(
		"tool declarations put on B while the run waits on A: A's run takes them in, as a PATCH's",
		async () => {
			const [A, B, C] = replicas as [Replica, Replica, Replica];
			const id = await createSession(C, { clientTools: [{ name: "ask_user", description: "Ask the user" }] });
			const stream = await promptSse(A.url, id, { message: "/tool ask_user" });
			const call = await stream.waitFor((e) => e.event === "tool_execution_start", T);
			const put = await json(`${B.url}/v1/sessions/${id}/tool-declarations`, "PUT", {
				toolApprovals: { calculate: "always" },
			});
			expect(put.status, JSON.stringify(put.body)).toBe(200);
			expect(put.body.toolApprovals).toEqual({ calculate: "always" });
			// A runs the session: its state is its own, and shows the new rules once it took them in.
			await waitUntil("A took the declarations in", async () => {
				const state = await json(`${A.url}/v1/sessions/${id}`);
				return JSON.stringify(state.body.toolApprovals) === JSON.stringify({ calculate: "always" }) ? true : undefined;
			});
			await json(`${C.url}/v1/sessions/${id}/tool-results/${call.data.toolCallId}`, "POST", { content: "yes" });
			await stream.waitForType("agent_end", T);
		},
		T,
	);
});

describe.skipIf(ok)("cluster: a config patch on one replica, runs on the others (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
