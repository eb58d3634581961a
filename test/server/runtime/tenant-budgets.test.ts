/**
 * Per-tenant budgets and usage, against real server processes with JWT auth from a local identity
 * provider: alice and bob are in org A, carol in org B, and org A has a token budget
 * (`auth.tenantBudgets`). Once alice's run spent it, alice and bob get 429
 * `TENANT_BUDGET_EXHAUSTED` on every path that starts a run (`/v1` prompt and continue, the OpenAI
 * facade, AG-UI, A2A, MCP, pi's `/api/stream`, a schedule's fire), and carol does not. A caller
 * with the tenant admin scope reads its whole tenant's usage, by owner; others read their own, and
 * nobody another tenant's. Sessions show their visibility and their owner's tenant.
 *
 * The examples of docs/identity.md's "Budgets and usage per tenant" run here too: the config
 * fragment is accepted with its values, and the `curl` reads the tenant's usage as the admin.
 *
 * API keys with a tenant (`auth.keyTenants`) share their tenant's budget too, a run that crosses
 * it ends before its next model call, and a key of `auth.usageAdminKeys` reads its tenant's usage.
 * With `admission: "queue"`, a spent tenant's prompt is refused rather than queued.
 *
 * Once on SQLite in one process, and once on PostgreSQL in a cluster of two replicas where the
 * budget is spent through one replica and refused on the other: the spending is read from the
 * store, not counted per process.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fauxToolCall } from "../../../src/ai/providers/faux.js";
import { loadConfig } from "../../../src/server/config/config.js";
import { resolveIdentitySettings } from "../../../src/server/http/identity/settings.js";
import { ownerIdOf } from "../../../src/server/runtime/owner-id.js";
import { a2aClient, userMessage as a2aMessage } from "../../helpers/a2a.js";
import { haveClusterServices, NO_CLUSTER_SERVICES, testCluster } from "../../helpers/cluster.js";
import { docBlock } from "../../helpers/doc-blocks.js";
import {
	type IdentityProvider,
	jwtAuthConfig,
	startIdentityProvider,
	type UserName,
} from "../../helpers/jwks-server.js";
import { type MainProcess, refusedStartup, startMain, stopAll } from "../../helpers/main-process.js";
import { scriptedModel, usage } from "../../helpers/scripted-session.js";
import { startServer } from "../../helpers/server.js";

const ADMIN_SCOPE = "openid agents usage:tenant";
const PAGE = "docs/identity.md";
const cluster = testCluster("tenant-budgets");
let dir: string;
let idp: IdentityProvider;

beforeAll(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-tenant-budgets-"));
	idp = await startIdentityProvider();
});

afterAll(async () => {
	stopAll();
	await cluster.dropRedisKeys().catch(() => undefined);
	await idp?.close();
	rmSync(dir, { recursive: true, force: true });
});

/** A config file with JWT auth, org A's budget (a token: the first run spends it) and a profile. */
function configFile(name: string): string {
	const file = path.join(dir, `${name}.json`);
	writeFileSync(
		file,
		JSON.stringify({
			profiles: { helper: { model: "faux/echo" } },
			auth: { ...jwtAuthConfig(idp), tenantBudgets: { "org-a": { maxTokens: 1, period: "day" } } },
		}),
	);
	return file;
}

interface Answer {
	status: number;
	body: any;
}

/** The calls of one user (with the tenant admin scope when `admin`) on one server. */
async function caller(server: MainProcess, user: UserName, admin = false) {
	const token = await idp.token(user, admin ? { scope: ADMIN_SCOPE } : {});
	const call = async (method: string, url: string, body?: unknown): Promise<Answer> => {
		const res = await fetch(`${server.url}${url}`, {
			method,
			headers: {
				authorization: `Bearer ${token}`,
				...(body === undefined ? {} : { "content-type": "application/json" }),
			},
			body: body === undefined ? undefined : JSON.stringify(body),
			signal: AbortSignal.timeout(20_000),
		});
		const text = await res.text();
		let parsed: unknown = text;
		try {
			parsed = text ? JSON.parse(text) : undefined;
		} catch {
			// an SSE body
		}
		return { status: res.status, body: parsed };
	};
	return { user, token, server, call };
}

type Caller = Awaited<ReturnType<typeof caller>>;

/** Waits until the session has no run. */
async function idle(c: Caller, id: string): Promise<void> {
	const deadline = Date.now() + 20_000;
	while ((await c.call("GET", `/v1/sessions/${id}`)).body.status !== "idle") {
		if (Date.now() > deadline) throw new Error(`${id} did not become idle`);
		await new Promise((resolve) => setTimeout(resolve, 50));
	}
}

/**
 * Starts a run on every path as `c`; resolves to what each answered, normalized to the error code
 * it refused with (`null`: it started a run).
 */
async function everyPath(c: Caller): Promise<Record<string, string | null>> {
	const outcome: Record<string, string | null> = {};
	const codeOf = (res: Answer, ok: number) =>
		res.status === ok ? null : `${res.status} ${res.body?.error?.code ?? res.body?.code ?? JSON.stringify(res.body)}`;

	// /v1: a prompt on a new session, a continue of one created with a user message last.
	const session = await c.call("POST", "/v1/sessions", { model: "faux/echo" });
	expect(session.status).toBe(201);
	outcome.prompt = codeOf(
		await c.call("POST", `/v1/sessions/${session.body.id}/prompt?stream=false`, { message: "hi" }),
		202,
	);
	const waiting = await c.call("POST", "/v1/sessions", {
		model: "faux/echo",
		messages: [{ role: "user", content: "from history", timestamp: 1 }],
	});
	expect(waiting.status).toBe(201);
	outcome.continue = codeOf(await c.call("POST", `/v1/sessions/${waiting.body.id}/continue?stream=false`), 202);

	// The OpenAI facade: Chat Completions and Responses.
	outcome.chatCompletions = codeOf(
		await c.call("POST", "/openai/v1/chat/completions", {
			model: "faux/echo",
			messages: [{ role: "user", content: "hi" }],
		}),
		200,
	);
	outcome.responses = codeOf(await c.call("POST", "/openai/v1/responses", { model: "faux/echo", input: "hi" }), 200);

	// AG-UI.
	outcome.agui = codeOf(
		await c.call("POST", "/agui/v1/run", {
			threadId: `thread-${c.user}-${Date.now()}`,
			runId: `run-${c.user}`,
			messages: [{ id: `m-${c.user}`, role: "user", content: "hi" }],
			tools: [],
			context: [],
			state: {},
			forwardedProps: {},
		}),
		200,
	);

	// A2A (JSON-RPC: the refusal is an error object with the code in its data).
	const a2a = await a2aClient(c.server.url, c.token);
	outcome.a2a = await a2a.sendMessage({ message: a2aMessage(["hi"]) } as never).then(
		() => null,
		(err: Error) => (/^Tenant budget reached/.test(err.message) ? "A2A TENANT_BUDGET_EXHAUSTED" : err.message),
	);

	// MCP (a refused tool call is a result with isError, its text led by the code).
	const mcp = new McpClient({ name: "test", version: "1.0.0" });
	await mcp.connect(
		new StreamableHTTPClientTransport(new URL(`${c.server.url}/mcp`), {
			requestInit: { headers: { authorization: `Bearer ${c.token}` } },
		}),
	);
	try {
		const result = (await mcp.callTool({ name: "agent_helper", arguments: { message: "hi" } })) as {
			isError?: boolean;
			content: Array<{ text: string }>;
		};
		outcome.mcp = result.isError ? `MCP ${result.content[0]!.text.split(":")[0]}` : null;
	} finally {
		await mcp.close();
	}

	// pi's streamProxy.
	const proxied = await fetch(`${c.server.url}/api/stream`, {
		method: "POST",
		headers: { authorization: `Bearer ${c.token}`, "content-type": "application/json" },
		body: JSON.stringify({
			model: { provider: "faux", id: "echo" },
			context: { messages: [{ role: "user", content: "hi", timestamp: 1 }] },
		}),
	});
	const proxyText = await proxied.text();
	outcome.piProxy = proxied.status === 200 ? null : `${proxied.status} ${JSON.parse(proxyText).code}`;

	// A schedule fired now: the fire records why no run started.
	const schedule = await c.call("POST", "/v1/schedules", { cron: "0 9 1 1 *", profile: "helper", prompt: "hi" });
	expect(schedule.status).toBe(201);
	const fire = await c.call("POST", `/v1/schedules/${schedule.body.id}/run-now`);
	expect(fire.status).toBe(202);
	outcome.schedule =
		fire.body.outcome === "failed" ? `fire ${String(fire.body.reason).split(":")[0]}` : fire.body.outcome;
	return outcome;
}

const REFUSED = {
	prompt: "429 TENANT_BUDGET_EXHAUSTED",
	continue: "429 TENANT_BUDGET_EXHAUSTED",
	chatCompletions: "429 TENANT_BUDGET_EXHAUSTED",
	responses: "429 TENANT_BUDGET_EXHAUSTED",
	agui: "429 TENANT_BUDGET_EXHAUSTED",
	a2a: "A2A TENANT_BUDGET_EXHAUSTED",
	mcp: "MCP TENANT_BUDGET_EXHAUSTED",
	piProxy: "429 TENANT_BUDGET_EXHAUSTED",
	schedule: "fire TENANT_BUDGET_EXHAUSTED",
};

const STARTED = {
	prompt: null,
	continue: null,
	chatCompletions: null,
	responses: null,
	agui: null,
	a2a: null,
	mcp: null,
	piProxy: null,
	schedule: "fired",
};

/**
 * The scenario on `spender` (where alice spends org A's budget) and `other` (where the refusals
 * are asked for; the same server on SQLite, another replica in the cluster).
 */
async function scenario(spender: MainProcess, other: MainProcess): Promise<void> {
	const alice = await caller(spender, "alice", true);
	const bob = await caller(other, "bob");
	// A session of bob's in memory on the other server before org A's budget is spent (its
	// tenant's spending was read then: none).
	const bobsEarlier = await bob.call("POST", "/v1/sessions", { model: "faux/echo" });
	expect(bobsEarlier.body.tenantBudget).toMatchObject({ usedTokens: 0, exhausted: null });
	// Before anything is spent org A's budget is whole: a shared session of alice's shows its tenant.
	const created = await alice.call("POST", "/v1/sessions", { model: "faux/echo", visibility: "tenant" });
	expect(created.status).toBe(201);
	expect(created.body).toMatchObject({ visibility: "tenant", tenant: "org-a" });
	expect(created.body.tenantBudget).toMatchObject({ tenant: "org-a", maxTokens: 1, usedTokens: 0, exhausted: null });
	const run = await alice.call("POST", `/v1/sessions/${created.body.id}/prompt?stream=false`, { message: "spend" });
	expect(run.status).toBe(202);
	await idle(alice, created.body.id);
	// First thing after: bob's earlier session is refused, as the spending is read again before a
	// run starts.
	const earlier = await bob.call("POST", `/v1/sessions/${bobsEarlier.body.id}/prompt`, { message: "now" });
	expect(earlier.status).toBe(429);
	expect(earlier.body.error.code).toBe("TENANT_BUDGET_EXHAUSTED");

	const aliceThere = await caller(other, "alice", true);
	const carol = await caller(other, "carol", true);

	// Sessions show visibility and the owner's tenant, in the view and the list (bob sees the shared one).
	const listed = await bob.call("GET", "/v1/sessions");
	expect(listed.body.sessions).toHaveLength(2);
	expect(listed.body.sessions).toEqual(
		expect.arrayContaining([
			expect.objectContaining({ id: created.body.id, visibility: "tenant", tenant: "org-a" }),
			expect.objectContaining({ id: bobsEarlier.body.id, visibility: "owner", tenant: "org-a" }),
		]),
	);
	const view = await bob.call("GET", `/v1/sessions/${created.body.id}`);
	expect(view.body).toMatchObject({ visibility: "tenant", tenant: "org-a" });
	expect(JSON.stringify(view.body)).not.toContain(alice.token);

	// Org A is spent: alice and bob are refused on every path, carol (org B) starts runs on each.
	expect(await everyPath(aliceThere)).toEqual(REFUSED);
	expect(await everyPath(bob)).toEqual(REFUSED);
	expect(await everyPath(carol)).toEqual(STARTED);
	const refused = await bob.call("POST", `/v1/sessions/${created.body.id}/prompt`, { message: "more" });
	expect(refused.body.error).toMatchObject({
		code: "TENANT_BUDGET_EXHAUSTED",
		details: { tenant: "org-a", limit: "maxTokens", max: 1 },
	});
	expect(refused.body.error.message).toMatch(/^Tenant budget reached: maxTokens is 1 per day and this tenant has used/);

	// Usage: the tenant admin scope reads org A's, by owner; bob without it reads only his own.
	const orgA = await aliceThere.call("GET", "/v1/usage?scope=tenant");
	expect(orgA.status).toBe(200);
	const aliceOwn = await aliceThere.call("GET", "/v1/usage");
	expect(aliceOwn.body.total.totalTokens).toBeGreaterThan(0);
	expect(orgA.body).toMatchObject({
		scope: "tenant",
		tenant: "org-a",
		total: aliceOwn.body.total,
		byOwner: [{ ownerId: aliceOwn.body.ownerId, ...aliceOwn.body.total }],
		byModel: [{ provider: "faux", model: "echo", ...aliceOwn.body.total }],
		tenantBudget: { tenant: "org-a", exhausted: "maxTokens", usedTokens: aliceOwn.body.total.totalTokens },
	});
	const bobScoped = await bob.call("GET", "/v1/usage?scope=tenant");
	expect(bobScoped.status).toBe(403);
	expect(bobScoped.body.error.code).toBe("USAGE_SCOPE_REQUIRED");
	const bobOwn = await bob.call("GET", "/v1/usage");
	expect(bobOwn.body).toMatchObject({ scope: "own", tenant: "org-a", total: { totalTokens: 0 }, rows: [] });
	expect(bobOwn.body.tenantBudget).toMatchObject({ exhausted: "maxTokens" });

	// Carol, admin of org B, reads org B's usage: her own runs, nothing of org A's.
	const orgB = await carol.call("GET", "/v1/usage?scope=tenant");
	expect(orgB.status).toBe(200);
	const carolOwn = await carol.call("GET", "/v1/usage");
	expect(orgB.body).toMatchObject({ scope: "tenant", tenant: "org-b", total: carolOwn.body.total, tenantBudget: null });
	expect(orgB.body.byOwner.map((o: { ownerId: string }) => o.ownerId)).toEqual([carolOwn.body.ownerId]);
	// The page's example, as the tenant admin.
	const example = /'localhost:3000(\S+)'/.exec(docBlock(PAGE, "sh", "scope=tenant").code)![1]!;
	const pasted = await aliceThere.call("GET", example);
	expect(pasted.status).toBe(200);
	expect(pasted.body).toMatchObject({ scope: "tenant", tenant: "org-a", from: "2026-12-01", to: "2026-12-31" });
	// No query names another tenant.
	const named = await carol.call("GET", "/v1/usage?scope=tenant&tenant=org-a");
	expect(named.status).toBe(400);
}

describe("per-tenant budgets and usage", () => {
	it("SQLite, one process: org A's spent budget refuses alice and bob on every path, not carol", async () => {
		const server = await startMain({
			db: path.join(dir, "wh.db"),
			env: { WHEELHOUSE_CONFIG: configFile("sqlite") },
		});
		await scenario(server, server);
	}, 120_000);

	it("PostgreSQL, two replicas: spent through one replica, refused on the other", async (context) => {
		if (!(await haveClusterServices())) return context.skip(NO_CLUSTER_SERVICES);
		const [a, b] = await cluster.start(2, { fauxDelayMs: 1, env: { WHEELHOUSE_CONFIG: configFile("cluster") } });
		await scenario(a!, b!);
	}, 180_000);

	it("a bad auth.tenantBudgets stops startup, naming the field", async () => {
		const file = path.join(dir, "bad.json");
		writeFileSync(
			file,
			JSON.stringify({ auth: { ...jwtAuthConfig(idp), tenantBudgets: { "org-a": { maxCostUsd: -1 } } } }),
		);
		const refused = await refusedStartup({ WHEELHOUSE_CONFIG: file });
		expect(refused.code).not.toBe(0);
		expect(refused.stderr).toContain('auth.tenantBudgets["org-a"].maxCostUsd: must be a positive number of USD');
		// An admin key must be a configured key with a tenant (its tenant's usage is what it reads).
		expect(() => resolveIdentitySettings({ usageAdminKeys: ["plain-key-0123456"] }, ["plain-key-0123456"])).toThrow(
			'auth.usageAdminKeys[0] ("plai…"): has no tenant',
		);
		expect(() => resolveIdentitySettings({ usageAdminKeys: ["unknown-key-0123"] }, [])).toThrow(
			'auth.usageAdminKeys[0] ("unkn…"): is not one of apiKeys',
		);
	}, 60_000);

	it("the page's config fragment is accepted with its values", () => {
		const file = path.join(dir, "page.json");
		writeFileSync(file, `{ ${docBlock(PAGE, "json", '"tenantBudgets"').code} }`);
		const settings = resolveIdentitySettings(loadConfig({ WHEELHOUSE_CONFIG: file }).authConfig, []);
		expect(settings.tenantBudgets.byTenant.get("org-a")).toEqual({
			maxTokens: 5_000_000,
			maxCostUsd: 100,
			period: "month",
		});
		expect(settings.tenantBudgets.fallback).toEqual({ maxCostUsd: 20, period: "day" });
		expect(settings.usageAdminScope).toBe("usage:tenant");
	});

	it("API keys of one tenant share its budget: a run that crosses it ends before its next call; the other tenant goes on", async () => {
		const model = scriptedModel("tenant-budgets-faux");
		const [KEY_A1, KEY_A2, KEY_B] = ["tenant-a-key-one-01", "tenant-a-key-two-01", "tenant-b-key-one-01"];
		const server = await startServer({
			models: [model.faux.getModel()],
			config: {
				apiKeys: [KEY_A1, KEY_A2, KEY_B],
				authConfig: {
					keyTenants: { [KEY_A1]: "org-a", [KEY_A2]: "org-a", [KEY_B]: "org-b" },
					tenantBudgets: { "org-a": { maxTokens: 1000, period: "day" } },
					usageAdminKeys: [KEY_A2],
				},
			} as never,
		});
		try {
			const session = async (key: string) =>
				(await server.request("POST", "/v1/sessions", { key, body: { model: model.spec } })).body.id as string;
			const run = async (key: string, id: string, message: string) => {
				const res = await server.request("POST", `/v1/sessions/${id}/prompt`, { key, body: { message } });
				if (res.status === 202) await server.app.wheelhouse.sessions.get(id, ownerIdOf(key)).waitForIdle();
				return res;
			};
			const a1 = await session(KEY_A1);
			const a2 = await session(KEY_A2);
			const b = await session(KEY_B);
			model.script({ content: "first", usage: usage(600, 0.5) });
			expect((await run(KEY_A1, a1, "one")).status).toBe(202);
			// The other key of org A crosses the limit with a tool turn: its next call is not made.
			model.script(
				{ content: fauxToolCall("calculate", { expression: "1+1" }), usage: usage(500) },
				{ content: "never sent", usage: usage(1) },
			);
			expect((await run(KEY_A2, a2, "two")).status).toBe(202);
			expect(model.requests).toHaveLength(2);
			const messages = (await server.request("GET", `/v1/sessions/${a2}/messages`, { key: KEY_A2 })).body.messages;
			expect(messages.at(-1)).toMatchObject({ role: "assistant", stopReason: "error" });
			expect(messages.at(-1).errorMessage).toMatch(
				/^Tenant budget reached: maxTokens is 1000 per day and this tenant has used 1100 tokens since/,
			);
			const view = (await server.request("GET", `/v1/sessions/${a1}`, { key: KEY_A1 })).body;
			expect(view).toMatchObject({ visibility: "owner", tenant: "org-a" });
			expect(view.tenantBudget).toMatchObject({ tenant: "org-a", usedTokens: 1100, exhausted: "maxTokens" });
			const refused = await run(KEY_A1, a1, "three");
			expect(refused.status).toBe(429);
			expect(refused.body.error.code).toBe("TENANT_BUDGET_EXHAUSTED");
			// Org B has no budget. The admin key reads org A's usage by key; another key may not.
			model.script({ content: "b", usage: usage(5000) });
			expect((await run(KEY_B, b, "hi")).status).toBe(202);
			expect((await server.request("GET", `/v1/sessions/${b}`, { key: KEY_B })).body.tenantBudget).toBeNull();
			const keyScoped = await server.request("GET", "/v1/usage?scope=tenant", { key: KEY_A1 });
			expect(keyScoped.status).toBe(403);
			expect(keyScoped.body.error.code).toBe("USAGE_SCOPE_REQUIRED");
			const orgA = await server.request("GET", "/v1/usage?scope=tenant", { key: KEY_A2 });
			expect(orgA.status).toBe(200);
			expect(orgA.body).toMatchObject({ scope: "tenant", tenant: "org-a", total: { totalTokens: 1100 } });
			expect(
				orgA.body.byOwner.map((o: { ownerId: string; totalTokens: number }) => [o.ownerId, o.totalTokens]),
			).toEqual([
				[ownerIdOf(KEY_A1), 600],
				[ownerIdOf(KEY_A2), 500],
			]);
			expect((await server.request("GET", "/v1/usage", { key: KEY_A2 })).body).toMatchObject({
				scope: "own",
				tenant: "org-a",
				total: { totalTokens: 500 },
				tenantBudget: { usedTokens: 1100 },
			});
		} finally {
			await server.close();
		}
	});

	it('with admission "queue", a spent tenant\'s prompt is refused, not queued behind its running run', async () => {
		const model = scriptedModel("tenant-budgets-admission-faux");
		const [KEY_A1, KEY_A2] = ["queue-a-key-one-01", "queue-a-key-two-01"];
		const server = await startServer({
			models: [model.faux.getModel()],
			config: {
				apiKeys: [KEY_A1, KEY_A2],
				authConfig: {
					keyTenants: { [KEY_A1]: "org-a", [KEY_A2]: "org-a" },
					tenantBudgets: { "org-a": { maxTokens: 1000 } },
					maxRunsPerTenant: 1,
					admission: "queue",
				},
			} as never,
		});
		try {
			const pickColor = { name: "pick_color", description: "Ask the user", parameters: { type: "object" } };
			const a1 = (await server.request("POST", "/v1/sessions", { key: KEY_A1, body: { model: model.spec } })).body.id;
			const a2 = (
				await server.request("POST", "/v1/sessions", {
					key: KEY_A2,
					body: { model: model.spec, clientTools: [pickColor] },
				})
			).body.id;
			// A run of org A that spends its budget and stays running (it waits for its client tool),
			// holding the tenant's one slot.
			model.script({ content: fauxToolCall("pick_color", {}), usage: usage(1500) });
			expect(
				(await server.request("POST", `/v1/sessions/${a2}/prompt`, { key: KEY_A2, body: { message: "pick" } })).status,
			).toBe(202);
			const deadline = Date.now() + 10_000;
			while ((await server.request("GET", `/v1/sessions/${a2}`, { key: KEY_A2 })).body.pendingToolCalls.length === 0) {
				if (Date.now() > deadline) throw new Error("the client tool call never came");
				await new Promise((resolve) => setTimeout(resolve, 20));
			}
			const refused = await server.request("POST", `/v1/sessions/${a1}/prompt`, {
				key: KEY_A1,
				body: { message: "wait for a slot?" },
			});
			expect(refused.status).toBe(429);
			expect(refused.body.error.code).toBe("TENANT_BUDGET_EXHAUSTED");
			expect((await server.request("GET", `/v1/sessions/${a1}`, { key: KEY_A1 })).body.messageCount).toBe(0);
			await server.request("POST", `/v1/sessions/${a2}/abort`, { key: KEY_A2 });
		} finally {
			await server.close();
		}
	});
});
