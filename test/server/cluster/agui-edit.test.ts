/**
 * An edited AG-UI history on three replica processes (PostgreSQL + Redis), each request of the
 * unmodified `HttpAgent` to a random replica other than the previous one: the user edits the
 * second of three turns; the thread's one session is rewound there on whichever replica gets the
 * request, the edited turn answered in place, the replaced turns kept as a superseded branch that
 * every replica lists, and the next message goes on from the edit.
 */
import { HttpAgent } from "@ag-ui/client";
import type { Message } from "@ag-ui/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOnce } from "../../helpers/agui.js";
import { haveClusterServices, NO_CLUSTER_SERVICES, type Replica, testCluster } from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";

const ok = await haveClusterServices();
const cluster = testCluster("agui-edit");
const T = 90_000;

type Stored = { role: string; content: { type: string; text?: string }[] | string };
const textOf = (m: Stored) =>
	typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

describe.skipIf(!ok)("cluster: an edited AG-UI history on random replicas", () => {
	let replicas: Replica[];
	beforeAll(async () => {
		replicas = await cluster.start(3, { fauxDelayMs: 5 });
	}, T);
	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
	});

	let last: Replica | undefined;
	const served: string[] = [];
	function pick(): Replica {
		const others = replicas.filter((r) => r !== last);
		last = others[Math.floor(Math.random() * others.length)]!;
		return last;
	}

	it(
		"the edit is made on whichever replica gets it; the branch is listed on every replica",
		async () => {
			const agent = new HttpAgent({
				url: `${replicas[0]!.url}/agui/v1/run`,
				threadId: `edit-${Date.now()}`,
				fetch: async (input: string, init: RequestInit) => {
					const target = pick();
					served.push(target.name);
					const url = new URL(input);
					url.host = new URL(target.url).host;
					return fetch(url, init);
				},
			});
			agent.addMessage({ id: "u1", role: "user", content: "first" });
			const { events } = await runOnce(agent);
			const sessionId = (events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata
				.wheelhouse.sessionId;
			agent.addMessage({ id: "u2", role: "user", content: "second" });
			await runOnce(agent);
			agent.addMessage({ id: "u3", role: "user", content: "third" });
			await runOnce(agent);

			agent.setMessages([
				...(agent.messages.slice(0, 2) as Message[]),
				{ id: "u2-edited", role: "user", content: "second, edited" },
			]);
			await runOnce(agent);
			agent.addMessage({ id: "u4", role: "user", content: "fourth" });
			await runOnce(agent);
			expect(new Set(served).size, "requests went to more than one replica").toBeGreaterThan(1);

			for (const replica of replicas) {
				const { body } = await json(`${replica.url}/v1/sessions/${sessionId}/messages`);
				expect((body.messages as Stored[]).map((m) => `${m.role}: ${textOf(m)}`)).toEqual([
					"user: first",
					"assistant: first",
					"user: second, edited",
					"assistant: second, edited",
					"user: fourth",
					"assistant: fourth",
				]);
				const branches = await json(`${replica.url}/v1/sessions/${sessionId}/branches`);
				expect(branches.body.branches).toHaveLength(1);
				expect(branches.body.branches[0]).toMatchObject({ fromMessageId: "wh-2", messageCount: 4 });
				expect((branches.body.branches[0].messages as Stored[]).map(textOf)).toEqual([
					"second",
					"second",
					"third",
					"third",
				]);
			}
			expect(agent.messages.map((m) => m.id)).toEqual([
				agent.messages[0]!.id,
				"wh-1",
				"u2-edited",
				"wh-3",
				"u4",
				"wh-5",
			]);
			// One session for the thread.
			const list = await json(`${replicas[1]!.url}/v1/sessions?limit=1000`);
			expect(list.body.sessions.filter((s: { id: string }) => s.id === sessionId)).toHaveLength(1);
		},
		T,
	);
});

describe.skipIf(ok)("cluster: an edited AG-UI history (no services)", () => {
	it.skip(NO_CLUSTER_SERVICES, () => {});
});
