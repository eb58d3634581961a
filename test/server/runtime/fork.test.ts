/**
 * Forking a session over real HTTP: three user turns, a fork after the second has 4 messages and
 * the parent's configuration; the parent's transcript and state are unchanged; both go on
 * independently (the fork in its own event id space); a running session is not forked (409); an
 * unknown message id is 404 naming the field; a cut inside a tool round is refused.
 */
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil, words } from "../../helpers/cluster.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

async function turn(id: string, message: string): Promise<number> {
	const res = await server!.request("POST", `/v1/sessions/${id}/prompt`, { body: { message } });
	expect(res.status, JSON.stringify(res.body)).toBe(202);
	await waitUntil("the run's end", async () => {
		const s = await server!.request("GET", `/v1/sessions/${id}`);
		return s.body.status === "idle" && !s.body.isStreaming ? true : undefined;
	});
	return res.body.firstEventId;
}

async function transcript(id: string): Promise<any[]> {
	return (await server!.request("GET", `/v1/sessions/${id}/messages?limit=1000`)).body.messages;
}

describe("fork", () => {
	it("forks after the second turn: 4 messages, same config, parent unchanged, both go on", async () => {
		server = await startServer();
		const parent = (
			await server.request("POST", "/v1/sessions", {
				body: { systemPrompt: "be terse", metadata: { team: "x" }, toolApprovals: { calculate: "always" } },
			})
		).body;
		for (const m of ["one", "two", "three"]) await turn(parent.id, m);
		const before = await transcript(parent.id);
		expect(before).toHaveLength(6);
		const parentBefore = (await server.request("GET", `/v1/sessions/${parent.id}`)).body;

		const forked = await server.request("POST", `/v1/sessions/${parent.id}/fork`, { body: { atMessageId: "wh-3" } });
		expect(forked.status, JSON.stringify(forked.body)).toBe(201);
		const fork = forked.body;
		expect(fork.id).not.toBe(parent.id);
		expect(fork).toMatchObject({
			systemPrompt: "be terse",
			model: parent.model,
			toolApprovals: { calculate: "always" },
			metadata: { team: "x", "wheelhouse.forkedFrom": parent.id, "wheelhouse.forkedAt": "wh-3" },
			messageCount: 4,
			status: "idle",
		});
		expect(await transcript(fork.id)).toEqual(before.slice(0, 4));
		expect(await transcript(parent.id)).toEqual(before);
		const parentAfter = (await server.request("GET", `/v1/sessions/${parent.id}`)).body;
		const { lastActiveAt: _a, ...restAfter } = parentAfter;
		const { lastActiveAt: _b, ...restBefore } = parentBefore;
		expect(restAfter).toEqual(restBefore);

		// Both go on: the fork's events start its own id space.
		expect(await turn(fork.id, "fork's turn")).toBe(1);
		expect(await turn(parent.id, "parent's turn")).toBeGreaterThan(1);
		const forkMessages = await transcript(fork.id);
		expect(forkMessages).toHaveLength(6);
		expect(forkMessages[4].content[0].text).toBe("fork's turn");
		const parentMessages = await transcript(parent.id);
		expect(parentMessages).toHaveLength(8);
		expect(parentMessages.slice(0, 6)).toEqual(before);

		// Without atMessageId: the whole transcript.
		const whole = await server.request("POST", `/v1/sessions/${parent.id}/fork`, { body: {} });
		expect(whole.body.messageCount).toBe(8);
	});

	it("refuses a running session, an unknown message and another key's session", async () => {
		server = await startServer({ config: { fauxDelayMs: 20, apiKeys: ["key-aaaaaaaa", "key-bbbbbbbb"] } });
		const key = "key-aaaaaaaa";
		const id = (await server.request("POST", "/v1/sessions", { body: {}, key })).body.id;
		const missing = await server.request("POST", `/v1/sessions/${id}/fork`, { body: { atMessageId: "wh-0" }, key });
		expect(missing.status).toBe(404);
		expect(missing.body.error).toMatchObject({
			code: "MESSAGE_NOT_FOUND",
			message: expect.stringMatching(/body\.atMessageId/),
		});
		const run = await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: words(200) }, key });
		expect(run.status).toBe(202);
		const busy = await server.request("POST", `/v1/sessions/${id}/fork`, { body: {}, key });
		expect(busy.status).toBe(409);
		expect(busy.body.error.code).toBe("AGENT_BUSY");
		const theirs = await server.request("POST", `/v1/sessions/${id}/fork`, { body: {}, key: "key-bbbbbbbb" });
		expect(theirs.status).toBe(404);
		expect(theirs.body.error.code).toBe("SESSION_NOT_FOUND");
	});

	it("does not cut between a tool call and its result", async () => {
		server = await startServer();
		const id = (
			await server.request("POST", "/v1/sessions", {
				body: {
					messages: [
						{ role: "user", content: "what is 6*7", timestamp: 1 },
						{
							role: "assistant",
							content: [{ type: "toolCall", id: "c1", name: "calculate", arguments: { expression: "6*7" } }],
							api: "faux",
							provider: "faux",
							model: "echo",
							usage: {
								input: 0,
								output: 0,
								cacheRead: 0,
								cacheWrite: 0,
								totalTokens: 0,
								cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
							},
							stopReason: "toolUse",
							timestamp: 2,
						},
						{
							role: "toolResult",
							toolCallId: "c1",
							toolName: "calculate",
							content: [{ type: "text", text: "42" }],
							isError: false,
							timestamp: 3,
						},
					],
				},
			})
		).body.id;
		const inside = await server.request("POST", `/v1/sessions/${id}/fork`, { body: { atMessageId: "wh-1" } });
		expect(inside.status).toBe(400);
		expect(inside.body.error.message).toMatch(/tool call round/);
		const after = await server.request("POST", `/v1/sessions/${id}/fork`, { body: { atMessageId: "wh-2" } });
		expect(after.status).toBe(201);
		expect(after.body.messageCount).toBe(3);
	});
});
