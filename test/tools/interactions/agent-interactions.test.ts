import { Type } from "@sinclair/typebox";
import { afterEach, describe, expect, it } from "vitest";
import { Agent } from "../../../src/agent/agent.js";
import type { AgentEvent, AgentTool } from "../../../src/agent/types.js";
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider } from "../../../src/ai/providers/faux.js";
import type { ToolResultMessage } from "../../../src/ai/types.js";
import {
	type ApprovalOutcome,
	createApprovalHook,
	createClientTool,
	PendingInteractions,
	type PendingRequest,
	resolveApprovalPolicy,
	validateClientToolSpecs,
} from "../../../src/tools/index.js";

const faux = registerFauxProvider({ api: "faux-tools-test", provider: "faux-tools-test" });
afterEach(() => faux.setResponses([]));

const ran: string[] = [];
const serverTool: AgentTool = {
	name: "server_echo",
	label: "echo",
	description: "echo",
	parameters: Type.Object({ text: Type.String() }),
	async execute(_id, params: any) {
		ran.push(params.text);
		return { content: [{ type: "text", text: `server:${params.text}` }], details: {} };
	},
};

/** An agent whose first turn makes `calls` and second turn says "done", with approvals and client tools wired. */
function setup(options: {
	approvals?: Record<string, "always" | "never">;
	timeoutMs?: number;
	calls: ReturnType<typeof fauxToolCall>[];
}) {
	const requested: PendingRequest[] = [];
	const resolved: { request: PendingRequest; outcome: ApprovalOutcome }[] = [];
	const pending = new PendingInteractions("s");
	const clientTool = createClientTool(
		{
			name: "client_pick",
			description: "Ask the user to pick",
			parameters: { type: "object", properties: { q: { type: "string" } } },
		},
		{ pending, timeoutMs: options.timeoutMs ?? 60_000, onRequested: (r) => requested.push(r) },
	);
	const agent = new Agent({
		initialState: { model: faux.getModel(), tools: [serverTool, clientTool] },
		streamFn: faux.stream,
		beforeToolCall: createApprovalHook({
			pending,
			policy: (name) => resolveApprovalPolicy(name, options.approvals),
			timeoutMs: options.timeoutMs ?? 60_000,
			onRequested: (r) => requested.push(r),
			onResolved: (request, outcome) => resolved.push({ request, outcome }),
		}),
	});
	const events: AgentEvent[] = [];
	const waiters: { match: (e: AgentEvent) => boolean; resolve: () => void }[] = [];
	agent.subscribe((event) => {
		events.push(event);
		for (const w of [...waiters]) if (w.match(event)) w.resolve();
	});
	/** Resolves on the first event (past or future) that matches. */
	const waitFor = (match: (e: AgentEvent) => boolean) =>
		events.some(match) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ match, resolve }));
	faux.setResponses([fauxAssistantMessage(options.calls, { stopReason: "toolUse" }), fauxAssistantMessage("done")]);
	const results = () =>
		events
			.filter((e): e is Extract<AgentEvent, { type: "message_end" }> => e.type === "message_end")
			.map((e) => e.message)
			.filter((m): m is ToolResultMessage => (m as ToolResultMessage).role === "toolResult");
	return { agent, pending, requested, resolved, events, waitFor, results };
}

const textOf = (m: ToolResultMessage) => m.content.map((c) => (c.type === "text" ? c.text : "")).join("");

describe("approval hook with the real agent loop", () => {
	it("runs the tool after approval", async () => {
		const t = setup({
			approvals: { server_echo: "always" },
			calls: [fauxToolCall("server_echo", { text: "a1" }, { id: "ap1" })],
		});
		const run = t.agent.prompt("go");
		await t.waitFor((e) => e.type === "tool_execution_start");
		await expect.poll(() => t.pending.list().length).toBe(1);
		expect(t.requested).toMatchObject([
			{ kind: "approval", toolCallId: "ap1", toolName: "server_echo", args: { text: "a1" } },
		]);
		expect(ran).not.toContain("a1");
		expect(t.pending.resolve("approval", "ap1", { approve: true })).toBe("resolved");
		await run;
		expect(ran).toContain("a1");
		expect(t.results().map((m) => [textOf(m), m.isError])).toEqual([["server:a1", false]]);
		expect(t.resolved[0]!.outcome).toEqual({ kind: "approved" });
	});

	it("blocks on denial with the reason as the error result", async () => {
		const t = setup({
			approvals: { "server_*": "always" },
			calls: [fauxToolCall("server_echo", { text: "d1" }, { id: "ap2" })],
		});
		const run = t.agent.prompt("go");
		await expect.poll(() => t.pending.list().length).toBe(1);
		t.pending.resolve("approval", "ap2", { approve: false, reason: "not on prod" });
		await run;
		expect(ran).not.toContain("d1");
		expect(t.results().map((m) => [textOf(m), m.isError])).toEqual([
			["The user denied the call to server_echo: not on prod", true],
		]);
	});

	it("blocks on timeout", async () => {
		const t = setup({
			approvals: { server_echo: "always" },
			timeoutMs: 30,
			calls: [fauxToolCall("server_echo", { text: "t1" }, { id: "ap3" })],
		});
		await t.agent.prompt("go");
		expect(ran).not.toContain("t1");
		expect(t.results()[0]!.isError).toBe(true);
		expect(textOf(t.results()[0]!)).toMatch(/No approval for server_echo within 30 ms; the tool was not run/);
		expect(t.resolved[0]!.outcome).toEqual({ kind: "timeout", timeoutMs: 30 });
		expect(t.pending.resolve("approval", "ap3", { approve: true })).toBe("finished");
	});

	it("ends the wait when the run is aborted", async () => {
		const t = setup({
			approvals: { server_echo: "always" },
			calls: [fauxToolCall("server_echo", { text: "x1" }, { id: "ap4" })],
		});
		const run = t.agent.prompt("go");
		await expect.poll(() => t.pending.list().length).toBe(1);
		t.agent.abort();
		await run;
		expect(ran).not.toContain("x1");
		expect(t.pending.list()).toEqual([]);
		expect(t.resolved[0]!.outcome).toEqual({ kind: "aborted" });
		expect(t.events.at(-1)!.type).toBe("agent_end");
	});

	it("does not wait for tools whose policy is never", async () => {
		const t = setup({
			approvals: { server_echo: "never" },
			calls: [fauxToolCall("server_echo", { text: "n1" }, { id: "ap5" })],
		});
		await t.agent.prompt("go");
		expect(t.requested).toEqual([]);
		expect(ran).toContain("n1");
	});
});

describe("client-side tools with the real agent loop", () => {
	it("waits for the posted result; tool_execution_start comes first", async () => {
		const t = setup({ calls: [fauxToolCall("client_pick", { q: "color?" }, { id: "ct1" })] });
		const run = t.agent.prompt("go");
		await t.waitFor((e) => e.type === "tool_execution_start" && e.toolCallId === "ct1");
		await expect.poll(() => t.pending.list("client_tool").length).toBe(1);
		expect(t.requested).toMatchObject([
			{ kind: "client_tool", toolCallId: "ct1", toolName: "client_pick", args: { q: "color?" } },
		]);
		expect(t.pending.resolve("client_tool", "ct1", { content: "blue", details: { ui: 1 } })).toBe("resolved");
		await run;
		const [result] = t.results();
		expect([textOf(result!), result!.isError, result!.details]).toEqual([
			"blue",
			false,
			{ client: true, details: { ui: 1 } },
		]);
		expect(t.pending.resolve("client_tool", "ct1", { content: "again" })).toBe("finished");
	});

	it("maps isError and timeouts to error results", async () => {
		const t = setup({ calls: [fauxToolCall("client_pick", {}, { id: "ct2" })] });
		const run = t.agent.prompt("go");
		await expect.poll(() => t.pending.list().length).toBe(1);
		t.pending.resolve("client_tool", "ct2", {
			content: [{ type: "text", text: "user closed the dialog" }],
			isError: true,
		});
		await run;
		expect([textOf(t.results()[0]!), t.results()[0]!.isError]).toEqual(["user closed the dialog", true]);

		const slow = setup({ timeoutMs: 20, calls: [fauxToolCall("client_pick", {}, { id: "ct3" })] });
		await slow.agent.prompt("go");
		expect(textOf(slow.results()[0]!)).toBe("The client did not return a result for client_pick within 20 ms");
		expect(slow.results()[0]!.isError).toBe(true);
	});

	it("a parallel batch mixes a server tool and a client tool; results keep source order", async () => {
		const t = setup({
			calls: [
				fauxToolCall("client_pick", { q: "?" }, { id: "pb1" }),
				fauxToolCall("server_echo", { text: "p1" }, { id: "pb2" }),
			],
		});
		const run = t.agent.prompt("go");
		// The server tool finishes while the client tool still waits.
		await t.waitFor((e) => e.type === "tool_execution_end" && e.toolCallId === "pb2");
		expect(t.pending.list().map((p) => p.toolCallId)).toEqual(["pb1"]);
		t.pending.resolve("client_tool", "pb1", { content: "picked" });
		await run;
		expect(t.results().map((m) => [m.toolCallId, textOf(m)])).toEqual([
			["pb1", "picked"],
			["pb2", "server:p1"],
		]);
		const ends = t.events.filter((e) => e.type === "tool_execution_end").map((e) => (e as any).toolCallId);
		expect(ends).toEqual(["pb2", "pb1"]);
	});

	it("a client tool can also need approval: approval first, then the result", async () => {
		const t = setup({ approvals: { client_pick: "always" }, calls: [fauxToolCall("client_pick", {}, { id: "ca1" })] });
		const run = t.agent.prompt("go");
		await expect.poll(() => t.pending.list().map((p) => p.kind)).toEqual(["approval"]);
		t.pending.resolve("approval", "ca1", { approve: true });
		await expect.poll(() => t.pending.list().map((p) => p.kind)).toEqual(["client_tool"]);
		t.pending.resolve("client_tool", "ca1", { content: "ok" });
		await run;
		expect(textOf(t.results()[0]!)).toBe("ok");
	});
});

describe("policies and declarations", () => {
	it("resolves exact names over prefixes, later rule sets winning", () => {
		expect(resolveApprovalPolicy("files__rm")).toBe("never");
		expect(resolveApprovalPolicy("files__rm", { "files__*": "always" })).toBe("always");
		expect(resolveApprovalPolicy("files__ls", { "files__*": "always", files__ls: "never" })).toBe("never");
		expect(resolveApprovalPolicy("files__ls", { "f*": "never", "files__*": "always" })).toBe("always");
		expect(resolveApprovalPolicy("files__rm", { "files__*": "always" }, { files__rm: "never" })).toBe("never");
		expect(resolveApprovalPolicy("toString", {})).toBe("never");
	});

	it("validates client tool declarations against server tools", () => {
		expect(
			validateClientToolSpecs(
				[
					{ name: "a", description: "" },
					{ name: "a", description: "" },
					{ name: "calculate", description: "" },
					{ name: "b", description: "", parameters: { type: "string" } },
				],
				["calculate"],
			),
		).toEqual([
			'clientTools.1.name: duplicate tool name "a"',
			'clientTools.2.name: "calculate" is already a server tool',
			'clientTools.3.parameters: must be a JSON Schema with "type": "object"',
		]);
	});
});
