/**
 * Every method of `WheelhouseClient` against the real server (buildApp on port 0, faux/echo model,
 * a gate tool to hold a run open, auth on): what each call sends is what the server carried out,
 * errors arrive as `WheelhouseError` with the stable code, and run-starting calls carry an
 * `Idempotency-Key` that makes a repeat safe.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ReceivedEvent, WheelhouseClient, WheelhouseError, WheelhouseHttpError } from "../../src/client/index.js";
import { createGateTool, type GateTool } from "../helpers/gate-tool.js";
import { startServer, type TestServer } from "../helpers/server.js";

const KEY = "client-methods-key-0123456789";
let server: TestServer;
let gate: GateTool;
let client: WheelhouseClient;
/** Every request the client sent: method, path and headers (a pass-through of the real fetch). */
const sent: { method: string; url: string; headers: Headers }[] = [];

beforeAll(async () => {
	gate = createGateTool();
	server = await startServer({
		tools: [gate.tool],
		config: { apiKeys: [KEY], tools: { approval: { calculate: "always" } } as never },
	});
	client = new WheelhouseClient({
		baseUrl: `${server.url}/`,
		apiKey: KEY,
		fetch: (input, init) => {
			sent.push({ method: init?.method ?? "GET", url: String(input), headers: new Headers(init?.headers) });
			return fetch(input, init);
		},
	});
});

afterAll(async () => {
	await server?.close();
});

async function collect(stream: AsyncIterable<ReceivedEvent>, onEvent?: (e: ReceivedEvent) => Promise<void>) {
	const events: ReceivedEvent[] = [];
	for await (const event of stream) {
		events.push(event);
		await onEvent?.(event);
	}
	return events;
}

const lastSent = (pathPart: string) => sent.filter((r) => r.url.includes(pathPart)).at(-1)!;

describe("WheelhouseClient against the real server", () => {
	it("catalog: models, tools, mcpServers, usage", async () => {
		const models = await client.models();
		expect(models.models.find((m) => m.id === "faux/echo")?.standIn).toBe(true);
		const tools = await client.tools();
		expect(tools.tools.map((t) => t.name)).toContain("calculate");
		const mcp = await client.mcpServers();
		expect(mcp.servers).toEqual([]);
		const usage = await client.usage({ from: "2026-01-01" });
		expect(usage.from).toBe("2026-01-01");
		expect(usage.total.totalTokens).toBeGreaterThanOrEqual(0);
		await expect(client.usage({ from: "not-a-day" })).rejects.toMatchObject({ code: "INVALID_USAGE_RANGE" });
	});

	it("sessions: create, get, list (all pages), update, messages, delete", async () => {
		const created = await client.createSession({ model: "faux/echo", metadata: { title: "methods" } });
		expect(created).toMatchObject({ model: "faux/echo", status: "idle", metadata: { title: "methods" } });
		expect((await client.getSession(created.id)).id).toBe(created.id);

		const others = await Promise.all([1, 2, 3].map(() => client.createSession({})));
		const page = await client.listSessions({ limit: 2 });
		expect(page.sessions).toHaveLength(2);
		expect(page.nextCursor).toBeTypeOf("string");
		const all: string[] = [];
		for await (const s of client.allSessions(2)) all.push(s.id);
		expect(all).toEqual(expect.arrayContaining([created.id, ...others.map((o) => o.id)]));

		const updated = await client.updateSession(created.id, {
			systemPrompt: "be brief",
			metadata: { title: "renamed" },
		});
		expect(updated).toMatchObject({ systemPrompt: "be brief", metadata: { title: "renamed" } });

		await collect(client.streamPrompt(created.id, "one two three"));
		const messages = await client.messages(created.id, { limit: 1, offset: 1 });
		expect(messages.total).toBe(2);
		expect(messages.messages[0]).toMatchObject({ role: "assistant" });
		expect(messages.nextOffset).toBeUndefined();

		expect(await client.deleteSession(created.id)).toEqual({ deleted: true, id: created.id });
		const gone = await client.getSession(created.id).catch((e) => e);
		expect(gone).toBeInstanceOf(WheelhouseError);
		expect(gone).toBeInstanceOf(WheelhouseHttpError);
		expect(gone).toMatchObject({ status: 404, code: "SESSION_NOT_FOUND" });
	});

	it("errors are WheelhouseError with the stable code and details", async () => {
		const bad = await client.createSession({ model: "nope/none" }).catch((e) => e);
		expect(bad).toBeInstanceOf(WheelhouseError);
		expect(bad.code).toBe("UNKNOWN_MODEL");
		const invalid = await client.createSession({ thinkingLevel: "loud" as never }).catch((e) => e);
		expect(invalid).toMatchObject({ status: 400, code: "VALIDATION_FAILED" });
		expect(invalid.message).toMatch(/thinkingLevel/);
		const anonymous = new WheelhouseClient({ baseUrl: server.url });
		await expect(anonymous.models()).rejects.toMatchObject({ status: 401, code: "UNAUTHORIZED" });
		expect(() => new WheelhouseClient({ baseUrl: "" })).toThrow(/baseUrl/);
	});

	it("prompt (202), events, steer, followUp, clearQueue, abort while a run is held open", async () => {
		const { id } = await client.createSession({});
		const started = await client.prompt(id, "/tool wait_for_gate {}");
		expect(started).toMatchObject({ status: "started" });
		expect(lastSent("/prompt").headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);
		await gate.started();

		const steer = await client.steer(id, "steered");
		expect(steer).toMatchObject({ status: "queued", queue: "steer", queueLength: 1 });
		expect(lastSent("/steer").headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);
		const follow = await client.followUp(id, "later", { idempotencyKey: "follow-1" });
		expect(follow).toMatchObject({ queue: "followUp", queueLength: 1 });
		// The same key again is the same request: answered from the record, not queued twice.
		const repeat = await client.followUp(id, "later", { idempotencyKey: "follow-1" });
		expect(repeat.queuedId).toBe(follow.queuedId);
		expect((await client.getSession(id)).queue).toMatchObject({ steeringCount: 1, followUpCount: 1 });
		const busy = await client.prompt(id, "again").catch((e) => e);
		expect(busy).toMatchObject({ status: 409, code: "AGENT_BUSY" });
		const queued = await client.prompt(id, "queued by ifBusy", { ifBusy: "followUp" });
		expect(queued).toMatchObject({ status: "queued", queue: "followUp" });

		expect(await client.clearQueue(id, "followUp")).toMatchObject({ cleared: 2, followUpCount: 0, steeringCount: 1 });
		expect(await client.clearQueue(id)).toMatchObject({ cleared: 1, steeringCount: 0 });

		const live = client.events(id, { until: (e) => e.type === "agent_end" });
		const first = await live.next();
		expect(first.value?.type).toBe("session_snapshot");
		expect(await client.abort(id)).toMatchObject({ aborted: true });
		const rest = await collect(live);
		expect(rest.at(-1)?.type).toBe("agent_end");
		expect((await client.getSession(id)).status).toBe("idle");
		expect(await client.abort(id)).toMatchObject({ aborted: false });
	});

	it("streamPrompt and streamContinue send an Idempotency-Key; a repeat of the key replays the same run", async () => {
		const { id } = await client.createSession({});
		const events = await collect(client.streamPrompt(id, "alpha beta", { idempotencyKey: "run-key-1" }));
		expect(events.at(-1)?.type).toBe("agent_end");
		expect(lastSent("/prompt").headers.get("idempotency-key")).toBe("run-key-1");
		const replay = await collect(client.streamPrompt(id, "alpha beta", { idempotencyKey: "run-key-1" }));
		expect(replay.map((e) => e.id)).toEqual(events.map((e) => e.id));
		expect((await client.messages(id)).total).toBe(2);

		const mismatch = await collect(client.streamPrompt(id, "other", { idempotencyKey: "run-key-1" })).catch((e) => e);
		expect(mismatch).toMatchObject({ status: 422, code: "IDEMPOTENCY_KEY_REUSED" });

		await client.updateSession(id, {}); // nothing changes; continuing from an assistant message is refused
		const cannot = await client.continue(id).catch((e) => e);
		expect(cannot).toBeInstanceOf(WheelhouseError);
		expect(cannot.code).toBe("CANNOT_CONTINUE_FROM_ASSISTANT");
		const fromUser = await client.createSession({ messages: [{ role: "user", content: "continue me", timestamp: 1 }] });
		const cont = await collect(client.streamContinue(fromUser.id));
		expect(cont.at(-1)?.type).toBe("agent_end");
		expect(lastSent("/continue").headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);
		const fromUser2 = await client.createSession({ messages: [{ role: "user", content: "again", timestamp: 1 }] });
		expect(await client.continue(fromUser2.id)).toMatchObject({ status: "started" });
	});

	it("approve and toolResult answer the calls the stream announces", async () => {
		const { id } = await client.createSession({
			tools: ["calculate"],
			clientTools: [{ name: "ask_user", description: "Ask the user", parameters: { type: "object" } }],
		});
		const approvals: string[] = [];
		const events = await collect(client.streamPrompt(id, '/tool calculate {"expression": "6 * 7"}'), async (e) => {
			if (e.type === "approval_requested") {
				approvals.push((e.data as any).toolCallId);
				expect(await client.approve(id, (e.data as any).toolCallId, { approve: true })).toMatchObject({
					status: "accepted",
				});
			}
		});
		expect(approvals).toHaveLength(1);
		const end = events.find((e) => e.type === "tool_execution_end")!.data as any;
		expect(end.isError).toBe(false);
		expect(JSON.stringify(end.result)).toContain("42");

		const clientCall = await collect(client.streamPrompt(id, '/tool ask_user {"q": "colour?"}'), async (e) => {
			if (e.type === "tool_execution_start" && (e.data as any).toolName === "ask_user") {
				await client.toolResult(id, (e.data as any).toolCallId, { content: "blue" });
			}
		});
		const last = clientCall.at(-1)!.data as any;
		expect(JSON.stringify(last.messages.at(-1))).toContain("blue");
		const unknown = await client.toolResult(id, "no-such-call", { content: "x" }).catch((e) => e);
		expect(unknown).toMatchObject({ status: 404, code: "TOOL_CALL_NOT_FOUND" });

		const declared = await client.setToolDeclarations(id, { toolApprovals: { calculate: "never" } });
		expect(declared.toolApprovals).toEqual({ calculate: "never" });
	});

	it("streamToken opens the events stream without the Authorization header; compact summarises", async () => {
		const { id } = await client.createSession({});
		await collect(client.streamPrompt(id, "first message here"));
		await collect(client.streamPrompt(id, "second message here"));
		const token = await client.streamToken(id);
		const res = await fetch(new URL(token.eventsUrl, server.url), { headers: { accept: "text/event-stream" } });
		expect(res.status).toBe(200);
		await res.body?.cancel();
		const compacted = await client.compact(id, { keepRecentTokens: 0 });
		expect(compacted).toMatchObject({ compacted: true });
		expect(compacted.tokensAfter).toBeLessThanOrEqual(compacted.tokensBefore);
	});

	it("a run-starting call whose answer is lost is repeated with its key: one run, not two", async () => {
		/** The real fetch, except that the answer to the first request matching `lose` never arrives. */
		const losing = (lose: RegExp) => {
			let lost = 0;
			const keys: (string | null)[] = [];
			const lossy: typeof fetch = async (input, init) => {
				if (lose.test(String(input))) keys.push(new Headers(init?.headers).get("idempotency-key"));
				const response = await fetch(input, init);
				if (lose.test(String(input)) && lost++ === 0) {
					await response.body?.cancel();
					throw new TypeError("fetch failed");
				}
				return response;
			};
			return { lossy, keys };
		};

		const plain = losing(/\/prompt$/);
		const retrying = new WheelhouseClient({ baseUrl: server.url, apiKey: KEY, fetch: plain.lossy, retryDelayMs: 10 });
		const { id } = await client.createSession({});
		const accepted = await retrying.prompt(id, "only once");
		expect(accepted).toMatchObject({ status: "started" });
		expect(plain.keys).toHaveLength(2);
		expect(plain.keys[0]).toBe(plain.keys[1]);
		const run = accepted as { firstEventId: number };
		await collect(client.events(id, { lastEventId: run.firstEventId - 1, until: (e) => e.type === "agent_end" }));
		expect((await client.messages(id)).messages.map((m: any) => m.role)).toEqual(["user", "assistant"]);

		const streamed = losing(/\/prompt$/);
		const streaming = new WheelhouseClient({ baseUrl: server.url, apiKey: KEY, fetch: streamed.lossy });
		const events = await collect(streaming.streamPrompt(id, "streamed once", { retryDelayMs: 10 }));
		expect(streamed.keys).toHaveLength(2);
		expect(streamed.keys[0]).toBe(streamed.keys[1]);
		expect(events[0]?.type).toBe("agent_start");
		expect(events.at(-1)?.type).toBe("agent_end");
		expect((await client.messages(id)).total).toBe(4);

		// A call without a key is not repeated: the lost answer is the caller's error.
		const once = losing(/\/abort$/);
		const noRetry = new WheelhouseClient({ baseUrl: server.url, apiKey: KEY, fetch: once.lossy, retryDelayMs: 10 });
		await expect(noRetry.abort(id)).rejects.toThrow("fetch failed");
		expect(once.keys).toEqual([null]);
	});
});
