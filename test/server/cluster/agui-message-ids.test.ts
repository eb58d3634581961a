/**
 * Two replica processes on one PostgreSQL schema and one Redis prefix: the client's ids of the
 * messages an AG-UI thread was prompted with are stored with its session, so a run request on the
 * other replica that carries them again prompts only the new message. The clients are unmodified
 * `HttpAgent`s of `@ag-ui/client`.
 */
import { HttpAgent } from "@ag-ui/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	testCluster,
	waitUntil,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";

const ok = await haveClusterServices();
const cluster = testCluster("agui-message-ids");
const T = 60_000;
const THREAD = "cluster-thread";
const MODEL = { forwardedProps: { wheelhouse: { model: "faux/echo" } } };

type UserMessage = { id: string; role: "user"; content: string };

function agentOn(replica: Replica, messages: UserMessage[]): HttpAgent {
	return new HttpAgent({ url: `${replica.url}/agui/v1/run`, threadId: THREAD, initialMessages: messages });
}

describe.skipIf(!ok)("cluster: AG-UI message ids across replicas", () => {
	let A: Replica;
	let B: Replica;
	beforeAll(async () => {
		[A, B] = (await cluster.start(2, { fauxDelayMs: 5 })) as [Replica, Replica];
	}, T);
	afterAll(() => stopAll());

	it(
		"run 1 on A, run 2 of the thread with the same messages and a new one on B: nothing prompted twice",
		async () => {
			const first: UserMessage = { id: "client-u1", role: "user", content: "first" };
			let sessionId = "";
			await agentOn(A, [first]).runAgent(MODEL, {
				onRunStartedEvent: ({ event }) => {
					sessionId = (event as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata.wheelhouse
						.sessionId;
				},
			});
			expect(sessionId).toMatch(/^ses_/);
			await waitUntil(`session ${sessionId} idle on B`, async () => {
				const res = await json(`${B.url}/v1/sessions/${sessionId}`);
				return res.body?.status === "idle" ? true : undefined;
			});

			// A client that kept its own messages but not the answer (or whose run ended before one).
			const second = agentOn(B, [first, { id: "client-u2", role: "user", content: "second" }]);
			const { newMessages } = await second.runAgent(MODEL);
			expect(newMessages.map((m) => m.role)).toEqual(["assistant"]);

			for (const replica of [A, B]) {
				const transcript = await json(`${replica.url}/v1/sessions/${sessionId}/messages`);
				expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual([
					"user",
					"assistant",
					"user",
					"assistant",
				]);
				const texts = transcript.body.messages
					.filter((m: { role: string }) => m.role === "user")
					.map((m: { content: string | { text?: string }[] }) =>
						typeof m.content === "string" ? m.content : m.content.map((b) => b.text ?? "").join(""),
					);
				expect(texts).toEqual(["first", "second"]);
			}
		},
		T,
	);
});

describe.skipIf(ok)("cluster: AG-UI message ids across replicas (no services)", () => {
	it(NO_CLUSTER_SERVICES, () => undefined);
});
