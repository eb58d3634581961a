/**
 * Sessions are kept apart by owner and tenant on every path, against a real server process (SQLite)
 * with JWT auth from a local identity provider: alice and bob are in org A, carol in org B.
 *
 * Alice's own session answers 404 to bob and carol on every operation of every path (`/v1`, its
 * events and stream token, client tokens, the OpenAI facade by response id and by tool call id,
 * AG-UI by thread id); a session she shares with her tenant (`visibility: "tenant"`) opens to bob
 * and stays 404 to carol. Lists show each caller what it may see. A walk over every operation of
 * `openapi.yaml` that names a session finds carol's answers for alice's session the same as for a
 * session that does not exist, and never a success. Bob's reuse of alice's `Idempotency-Key` on
 * their shared session starts his own run.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
	type IdentityProvider,
	jwtAuthConfig,
	startIdentityProvider,
	type UserName,
} from "../../../helpers/jwks-server.js";
import { type MainProcess, repoRoot, startMain, stopAll } from "../../../helpers/main-process.js";

const KEY_ORG_A = "key-of-org-a-000001";
const KEY_NO_TENANT = "key-without-tenant-01";
let dir: string;
let idp: IdentityProvider;
let server: MainProcess;
const tokens = {} as Record<UserName, string>;
/** Alice's sessions: her own, and one shared with org A. */
let own: string;
let shared: string;

/** Polls `check` until it is true, with a generous deadline (the machine may be busy). */
async function until(check: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
	const deadline = Date.now() + ms;
	while (!(await check())) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
}

/** Waits until the session has no run. */
function idle(id: string): Promise<void> {
	return until(async () => (await call("alice", "GET", `/v1/sessions/${id}`)).body.status === "idle", `${id} idle`);
}

async function call(
	user: UserName,
	method: string,
	url: string,
	body?: unknown,
	headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
	const res = await fetch(`${server.url}${url}`, {
		method,
		headers: {
			authorization: `Bearer ${tokens[user]}`,
			...(body === undefined ? {} : { "content-type": "application/json" }),
			...headers,
		},
		body: body === undefined ? undefined : JSON.stringify(body),
		signal: AbortSignal.timeout(15_000),
	});
	const text = await res.text();
	let parsed: unknown = text;
	try {
		parsed = text ? JSON.parse(text) : undefined;
	} catch {
		// an SSE body
	}
	return { status: res.status, body: parsed };
}

/** Every operation on one session, with a body it accepts. */
function sessionOperations(id: string): Array<[string, string, unknown?]> {
	const s = `/v1/sessions/${id}`;
	return [
		["GET", s],
		["PATCH", s, { systemPrompt: "changed" }],
		["GET", `${s}/messages`],
		["POST", `${s}/prompt`, { message: "hello" }],
		["POST", `${s}/continue`],
		["POST", `${s}/steer`, { message: "steer" }],
		["POST", `${s}/follow-up`, { message: "later" }],
		["DELETE", `${s}/queue`],
		["POST", `${s}/abort`],
		["GET", `${s}/events`],
		["POST", `${s}/stream-token`],
		["POST", `${s}/compact`, {}],
		["POST", `${s}/tool-results/call_1`, { content: "x" }],
		["POST", `${s}/approvals/call_1`, { approve: true }],
		["POST", `${s}/elicitations/eli_1`, { action: "decline" }],
		["PUT", `${s}/tool-declarations`, { clientTools: [] }],
		["POST", "/v1/tokens", { sessionId: id, scopes: ["read"] }],
		["DELETE", s],
	];
}

beforeAll(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-iso-"));
	idp = await startIdentityProvider();
	const config = path.join(dir, "config.json");
	writeFileSync(
		config,
		JSON.stringify({
			apiKeys: [KEY_ORG_A, KEY_NO_TENANT],
			auth: { ...jwtAuthConfig(idp), keyTenants: { [KEY_ORG_A]: "org-a" } },
		}),
	);
	server = await startMain({ db: path.join(dir, "wh.db"), env: { WHEELHOUSE_CONFIG: config } });
	for (const user of ["alice", "bob", "carol"] as const) tokens[user] = await idp.token(user);
	own = (await call("alice", "POST", "/v1/sessions", { model: "faux/echo" })).body.id;
	const made = await call("alice", "POST", "/v1/sessions", { model: "faux/echo", visibility: "tenant" });
	expect(made.status).toBe(201);
	shared = made.body.id;
	// Something in both: a run each.
	for (const id of [own, shared]) {
		const run = await call("alice", "POST", `/v1/sessions/${id}/prompt?stream=false`, { message: "first" });
		expect(run.status).toBe(202);
	}
	for (const id of [own, shared]) await idle(id);
});

afterAll(async () => {
	stopAll();
	await idp?.close();
	rmSync(dir, { recursive: true, force: true });
});

describe("who sees a session", () => {
	it("carol (another tenant) gets 404 on every operation of both of alice's sessions; bob on her own one", async () => {
		const probes: Array<[UserName, string]> = [
			["carol", own],
			["carol", shared],
			["bob", own],
		];
		for (const [user, id] of probes) {
			for (const [method, url, body] of sessionOperations(id)) {
				const res = await call(user, method, url, body);
				expect(res.status, `${user} ${method} ${url}`).toBe(404);
				expect(res.body.error.code, `${user} ${method} ${url}`).toBe("SESSION_NOT_FOUND");
			}
		}
		// Nothing they sent reached the sessions: still there, unchanged, one run each.
		for (const id of [own, shared]) {
			const view = await call("alice", "GET", `/v1/sessions/${id}`);
			expect(view.status).toBe(200);
			expect(view.body.systemPrompt).toBe("");
			const messages = await call("alice", "GET", `/v1/sessions/${id}/messages`);
			expect(messages.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
		}
	});

	it("bob (same tenant) reads and prompts the shared session", async () => {
		expect((await call("bob", "GET", `/v1/sessions/${shared}`)).status).toBe(200);
		expect((await call("bob", "GET", `/v1/sessions/${shared}/messages`)).body.messages).toHaveLength(2);
		const token = await call("bob", "POST", `/v1/sessions/${shared}/stream-token`);
		expect(token.status).toBe(200);
		const events = await fetch(`${server.url}${token.body.eventsUrl}&after=0`, { signal: AbortSignal.timeout(5000) });
		expect(events.status).toBe(200);
		await events.body?.cancel();
	});

	it("lists show each caller what it may see", async () => {
		const ids = async (user: UserName) =>
			(await call(user, "GET", "/v1/sessions")).body.sessions.map((s: { id: string }) => s.id).sort();
		expect(await ids("alice")).toEqual([own, shared].sort());
		expect(await ids("bob")).toEqual([shared]);
		expect(await ids("carol")).toEqual([]);
	});

	it("API keys get their tenant from auth.keyTenants: org A's key sees the shared session; a key without one cannot share", async () => {
		const asKey = (key: string, method: string, url: string, body?: unknown) =>
			fetch(`${server.url}${url}`, {
				method,
				headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
				body: body ? JSON.stringify(body) : undefined,
			}).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
		expect((await asKey(KEY_ORG_A, "GET", `/v1/sessions/${shared}`)).status).toBe(200);
		expect((await asKey(KEY_ORG_A, "GET", `/v1/sessions/${own}`)).status).toBe(404);
		expect((await asKey(KEY_NO_TENANT, "GET", `/v1/sessions/${shared}`)).status).toBe(404);
		const refused = await asKey(KEY_NO_TENANT, "POST", "/v1/sessions", { model: "faux/echo", visibility: "tenant" });
		expect(refused.status).toBe(400);
		expect(refused.body.error.message).toMatch(/^body\.visibility/);
		const unknown = await asKey(KEY_NO_TENANT, "POST", "/v1/sessions", { model: "faux/echo", visibility: "everyone" });
		expect(unknown.status).toBe(400);
		expect(unknown.body.error.message).toMatch(/visibility/);
	});

	it("bob's reuse of alice's Idempotency-Key on the shared session starts his own run", async () => {
		const key = "shared-key-1";
		const first = await call(
			"alice",
			"POST",
			`/v1/sessions/${shared}/prompt?stream=false`,
			{ message: "again" },
			{
				"idempotency-key": key,
			},
		);
		expect(first.status).toBe(202);
		await idle(shared);
		const repeat = await call(
			"alice",
			"POST",
			`/v1/sessions/${shared}/prompt?stream=false`,
			{ message: "again" },
			{
				"idempotency-key": key,
			},
		);
		expect(repeat.body.runId).toBe(first.body.runId);
		const bobs = await call(
			"bob",
			"POST",
			`/v1/sessions/${shared}/prompt?stream=false`,
			{ message: "again" },
			{
				"idempotency-key": key,
			},
		);
		expect(bobs.status).toBe(202);
		expect(bobs.body.runId).not.toBe(first.body.runId);
	});

	it("bob's reuse of alice's Idempotency-Key on a regenerate or a fork of the shared session is his own request", async () => {
		await idle(shared);
		const key = { "idempotency-key": "shared-branch-key" };
		const regen = await call("alice", "POST", `/v1/sessions/${shared}/regenerate`, undefined, key);
		expect(regen.status, JSON.stringify(regen.body)).toBe(202);
		await idle(shared);
		const bobsRegen = await call("bob", "POST", `/v1/sessions/${shared}/regenerate`, undefined, key);
		expect(bobsRegen.status).toBe(202);
		expect(bobsRegen.body.runId).not.toBe(regen.body.runId);
		await idle(shared);
		const forkKey = { "idempotency-key": "shared-fork-key" };
		const fork = await call("alice", "POST", `/v1/sessions/${shared}/fork`, {}, forkKey);
		expect(fork.status).toBe(201);
		const bobsFork = await call("bob", "POST", `/v1/sessions/${shared}/fork`, {}, forkKey);
		expect(bobsFork.status).toBe(201);
		expect(bobsFork.body.id).not.toBe(fork.body.id);
		// Each repeat of their own gets their own fork back.
		expect((await call("alice", "POST", `/v1/sessions/${shared}/fork`, {}, forkKey)).body.id).toBe(fork.body.id);
		expect((await call("bob", "POST", `/v1/sessions/${shared}/fork`, {}, forkKey)).body.id).toBe(bobsFork.body.id);
	});
});

describe("the facades", () => {
	it("OpenAI: carol gets 404 for alice's response id (retrieve, cancel, previous_response_id); her tool call id starts carol's own session", async () => {
		const openai = (user: UserName) =>
			new OpenAI({ apiKey: tokens[user], baseURL: `${server.url}/openai/v1`, maxRetries: 0 });
		const tools = [{ type: "function" as const, name: "pick_color", parameters: { type: "object" }, strict: false }];
		const input = '/tool pick_color {"question":"q"}';
		const first = await openai("alice").responses.create({ model: "faux/echo", input, tools });
		const call0 = first.output.find((item) => item.type === "function_call");
		if (call0?.type !== "function_call") throw new Error("expected a function call");
		for (const attempt of [
			openai("carol").responses.retrieve(first.id),
			openai("carol").responses.cancel(first.id),
			openai("carol").responses.create({ model: "faux/echo", input: "x", previous_response_id: first.id }),
		]) {
			await expect(attempt).rejects.toBeInstanceOf(OpenAI.NotFoundError);
		}
		const foreign = await openai("carol").responses.create({
			model: "faux/echo",
			input: [
				{ role: "user", content: input },
				{ type: "function_call", call_id: call0.call_id, name: "pick_color", arguments: call0.arguments },
				{ type: "function_call_output", call_id: call0.call_id, output: "mauve" },
			],
			tools,
		});
		expect(foreign.id).not.toBe(first.id);
		const sessionId = `ses_${first.id.split("_")[1]}`;
		const aliceView = await call("alice", "GET", `/v1/sessions/${sessionId}`);
		expect(aliceView.body.status).toBe("running");
		expect(aliceView.body.pendingClientToolCalls.map((p: { toolCallId: string }) => p.toolCallId)).toEqual([
			call0.call_id,
		]);
		await openai("alice").responses.cancel(first.id);
	});

	it("AG-UI: carol gets 404 for alice's thread id; her run with that id is a thread of her own", async () => {
		const threadId = "thread-of-alice";
		const run = (user: UserName, text: string) =>
			call(user, "POST", "/agui/v1/run", {
				threadId,
				runId: `run-${user}-${text}`,
				messages: [{ id: `m-${user}-${text}`, role: "user", content: text }],
				tools: [],
				context: [],
				state: {},
				forwardedProps: {},
			});
		expect((await run("alice", "hello")).status).toBe(200);
		const events = await call("carol", "GET", `/agui/v1/threads/${threadId}/events`);
		expect(events.status).toBe(404);
		expect(events.body.error.code).toBe("THREAD_NOT_FOUND");
		const carols = await run("carol", "mine");
		expect(carols.status).toBe(200);
		expect(String(carols.body)).not.toContain("hello");
		// None of alice's sessions got carol's message; one holds her own thread's.
		const texts: string[] = [];
		for (const { id } of (await call("alice", "GET", "/v1/sessions")).body.sessions as Array<{ id: string }>) {
			texts.push(JSON.stringify((await call("alice", "GET", `/v1/sessions/${id}/messages`)).body.messages));
		}
		expect(texts.some((t) => t.includes("hello"))).toBe(true);
		expect(texts.some((t) => t.includes("mine"))).toBe(false);
	});
});

describe("a walk over every operation of openapi.yaml", () => {
	it("answers others for alice's sessions, responses and threads exactly as for ones that do not exist, never with a success", async () => {
		const doc = parse(readFileSync(path.join(repoRoot, "openapi.yaml"), "utf8")) as {
			paths: Record<string, Record<string, unknown>>;
		};
		// Alice's things that other paths name: a response id and an AG-UI thread id.
		const response = await call("alice", "POST", "/openai/v1/responses", { model: "faux/echo", input: "walk" });
		expect(response.status).toBe(200);
		const thread = "walk-thread";
		const run = await call("alice", "POST", "/agui/v1/run", {
			threadId: thread,
			runId: "walk-run",
			messages: [{ id: "walk-m", role: "user", content: "walk" }],
			tools: [],
			context: [],
			state: {},
			forwardedProps: {},
		});
		expect(run.status).toBe(200);
		// A schedule of alice's (paused, so the walk's time never fires it).
		const schedule = await call("alice", "POST", "/v1/schedules", {
			cron: "0 9 1 1 *",
			profile: "",
			prompt: "walk",
		});
		expect(schedule.status).toBe(201);
		expect((await call("alice", "POST", `/v1/schedules/${schedule.body.id}/pause`)).status).toBeLessThan(300);
		/** For each path parameter: alice's values a prober may not see, and one that does not exist. */
		const probes: Array<{
			param: string;
			matches: (t: string) => boolean;
			foreign: Array<[UserName, string]>;
			missing: string;
		}> = [
			{
				param: "{id}",
				matches: (t) => t.startsWith("/v1/sessions/{id}"),
				foreign: [
					["carol", own],
					["carol", shared],
					["bob", own],
				],
				missing: "ses_doesnotexist0000000000",
			},
			{
				param: "{id}",
				matches: (t) => t.startsWith("/openai/v1/responses/{id}"),
				foreign: [
					["carol", response.body.id],
					["bob", response.body.id],
				],
				missing: "resp_doesnotexist000000000",
			},
			{
				param: "{threadId}",
				matches: (t) => t.startsWith("/agui/v1/threads/{threadId}"),
				foreign: [
					["carol", thread],
					["bob", thread],
				],
				missing: "no-such-thread",
			},
			{
				param: "{id}",
				matches: (t) => t.startsWith("/v1/schedules/{id}"),
				foreign: [
					["carol", schedule.body.id],
					["bob", schedule.body.id],
				],
				missing: "sch_doesnotexist0000000000",
			},
		];
		let walked = 0;
		for (const [template, operations] of Object.entries(doc.paths)) {
			if (!template.includes("{")) continue;
			const probe = probes.find((p) => p.matches(template));
			// Every route that names something is probed: a new one must be added above.
			expect(probe, `${template}: no probe for its path parameter`).toBeDefined();
			for (const method of Object.keys(operations)) {
				if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
				const body = method === "get" || method === "delete" ? undefined : bodyFor(template);
				const url = (value: string) =>
					template.replace(probe!.param, value).replace("{toolCallId}", "call_1").replace("{elicitationId}", "eli_1");
				for (const [user, value] of probe!.foreign) {
					const foreign = await call(user, method.toUpperCase(), url(value), body);
					const absent = await call(user, method.toUpperCase(), url(probe!.missing), body);
					const what = `${user} ${method} ${template}`;
					expect(foreign.status, what).toBe(absent.status);
					expect(foreign.body?.error?.code, what).toBe(absent.body?.error?.code);
					expect(foreign.status, what).toBeGreaterThanOrEqual(400);
				}
				walked++;
			}
		}
		expect(walked).toBeGreaterThanOrEqual(18);
		expect((await call("alice", "GET", `/v1/sessions/${own}`)).status).toBe(200);
		expect((await call("alice", "GET", `/openai/v1/responses/${response.body.id}`)).status).toBe(200);
	});
});

/** A body the operation at `template` accepts (so the answer is about the session, not the body). */
function bodyFor(template: string): unknown {
	if (/prompt|steer|follow-up/.test(template)) return { message: "probe" };
	if (template.includes("approvals")) return { approve: false };
	if (template.includes("elicitations")) return { action: "decline" };
	if (template.includes("tool-results")) return { content: "probe" };
	if (template.includes("tool-declarations")) return { clientTools: [] };
	if (template.startsWith("/v1/schedules/")) return template.endsWith("{id}") ? { prompt: "probe" } : undefined;
	if (template.endsWith("{id}")) return { systemPrompt: "probe" };
	if (template.endsWith("continue") || template.endsWith("abort") || template.endsWith("stream-token"))
		return undefined;
	return {};
}
