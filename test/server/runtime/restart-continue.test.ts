/**
 * A run cut short by a crash goes on by itself after the restart (`onInterrupt: "continue"`, the
 * default), as a client lives it: the real server process is SIGKILLed mid-answer or mid-tool and
 * restarted on the same SQLite file; a client resuming with `Last-Event-ID` sees the interruption
 * and then the continued run to its `agent_end`, each event once, in order. A tool call that was in
 * flight runs again only when its tool is declared idempotent (an HTTP tool of this test, counted
 * by the endpoint it calls); otherwise the model (faux/echo, which answers with the tool results
 * it was sent) sees an error result saying the call's result was not recorded. `"stop"` keeps the
 * session interrupted until a client continues it.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ReceivedEvent, streamPrompt } from "../../../src/client/index.js";
import { freePort, json, startMain, stopAll } from "../../helpers/main-process.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, type SseEvent } from "../../helpers/sse.js";

const dirs: string[] = [];
const servers: Server[] = [];
let inProcess: TestServer | undefined;
afterEach(async () => {
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
	for (const server of servers.splice(0)) {
		server.closeAllConnections();
		server.close();
	}
	await inProcess?.close();
	inProcess = undefined;
});

/** The endpoint the HTTP tools call: counts calls; the first never answers (the process dies during it). */
async function toolEndpoint() {
	const calls: string[] = [];
	const server = createServer((req: IncomingMessage, res: ServerResponse) => {
		calls.push(req.url ?? "");
		if (calls.length === 1) return; // in flight until the server process is killed
		res.writeHead(200, { "content-type": "text/plain" }).end(`done ${calls.length}`);
	});
	servers.push(server);
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	return { calls, url: `http://127.0.0.1:${port}` };
}

async function setup(endpoint?: string, env: Record<string, string> = {}) {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-continue-"));
	dirs.push(dir);
	const tool = (name: string, idempotent: boolean) => ({
		name,
		description: `calls the endpoint (${idempotent ? "idempotent" : "not idempotent"})`,
		method: "POST",
		url: `${endpoint}/${name}`,
		parameters: { type: "object", properties: { n: { type: "number" } } },
		timeoutMs: 60_000,
		idempotent,
	});
	writeFileSync(
		path.join(dir, "config.json"),
		JSON.stringify(endpoint ? { tools: { httpTools: [tool("write_once", false), tool("read_again", true)] } } : {}),
	);
	return { db: path.join(dir, "wh.db"), env: { WHEELHOUSE_CONFIG: path.join(dir, "config.json"), ...env } };
}

/** The events after `lastSeen`, checked to be each once and in order. */
function eventsAfter(events: SseEvent[], lastSeen: number): SseEvent[] {
	const later = events.filter((e) => e.id !== undefined && e.id > lastSeen);
	const ids = later.map((e) => e.id!);
	expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
	return later;
}

/**
 * A run calls `tool` (its endpoint holds the call), the server is SIGKILLed, then restarted: the
 * events a client resuming with `Last-Event-ID` sees after the kill, checked to begin with the
 * tool call's end, its result message, the interruption and the continued run.
 */
async function killMidTool(tool: string, n: number) {
	const endpoint = await toolEndpoint();
	const options = await setup(endpoint.url);
	const first = await startMain(options);
	const id = (await json(`${first.url}/v1/sessions`, "POST", {})).body.id;
	const events = await openSse(`${first.url}/v1/sessions/${id}/events`);
	await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: `/tool ${tool} {"n": ${n}}` });
	await events.waitForType("tool_execution_start", 15_000);
	await expect.poll(() => endpoint.calls.length, { timeout: 10_000 }).toBe(1);
	const lastSeen = events.events.at(-1)!.id!;
	events.close();
	first.child.kill("SIGKILL");
	await first.exited;

	const second = await startMain(options);
	const base = `${second.url}/v1/sessions/${id}`;
	const resumed = await openSse(`${base}/events`, { headers: { "last-event-id": String(lastSeen) } });
	const end = await resumed.waitForType("agent_end", 30_000);
	resumed.close();
	const later = eventsAfter(resumed.events, lastSeen);
	expect(later.map((e) => e.event).slice(0, 5)).toEqual([
		"tool_execution_end",
		"message_start",
		"message_end",
		"run_interrupted",
		"agent_start",
	]);
	return { endpoint, base, end, later };
}

describe("onInterrupt: continue (the default) after a SIGKILL", () => {
	it("mid-answer: a client resuming with Last-Event-ID sees run_interrupted, then the continued run to agent_end, once", {
		timeout: 90_000,
	}, async () => {
		const options = await setup(undefined, { WHEELHOUSE_FAUX_DELAY_MS: "40" });
		const first = await startMain(options);
		const id = (await json(`${first.url}/v1/sessions`, "POST", {})).body.id;
		const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
		const events = await openSse(`${first.url}/v1/sessions/${id}/events`);
		const prompt = await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: words });
		expect(prompt.status).toBe(202);
		// A few words of the answer are out: the process dies mid-answer.
		await events.waitFor(() => events.events.filter((e) => e.event === "message_update").length >= 3, 15_000);
		const lastSeen = events.events.at(-1)!.id!;
		events.close();
		first.child.kill("SIGKILL");
		await first.exited;

		const second = await startMain(options);
		const base = `${second.url}/v1/sessions/${id}`;
		const resumed = await openSse(`${base}/events`, { headers: { "last-event-id": String(lastSeen) } });
		await resumed.waitForType("agent_end", 30_000);
		await new Promise((resolve) => setTimeout(resolve, 300)); // nothing more may come
		resumed.close();
		const later = eventsAfter(resumed.events, lastSeen);
		const names = later.map((e) => e.event);
		const at = names.indexOf("run_interrupted");
		expect(at).toBeGreaterThanOrEqual(0);
		expect(names.filter((n) => n === "run_interrupted")).toHaveLength(1);
		expect(later[at]!.data).toMatchObject({
			runId: prompt.body.runId,
			reason: "server_restart",
			willContinue: true,
			interruptedAt: expect.any(Number),
		});
		const continued = names.slice(at + 1);
		expect(continued.slice(0, 3)).toEqual(["agent_start", "turn_start", "message_start"]);
		expect(continued.slice(-3)).toEqual(["message_end", "turn_end", "agent_end"]);
		expect(continued.filter((n) => n === "agent_start" || n === "agent_end")).toEqual(["agent_start", "agent_end"]);
		const end = later.at(-1)!;
		expect(end.data.messages.at(-1).content[0].text).toBe(words);

		const state = (await json(base)).body;
		expect(state).toMatchObject({ status: "idle", onInterrupt: "continue", lastEventId: end.id });
		const transcript = (await json(`${base}/messages`)).body.messages;
		expect(transcript.map((m: any) => m.role)).toEqual(["user", "assistant"]);
		const runs = second.output();
		expect(runs).toMatch(/1 run\(s\) were interrupted by the last stop; 1 continue by themselves/);
	});

	it("mid-tool, a tool not declared idempotent: not called again; the model gets the error result", {
		timeout: 90_000,
	}, async () => {
		const { endpoint, end, later } = await killMidTool("write_once", 1);
		expect(later[0]!.data).toMatchObject({ toolName: "write_once", isError: true });
		expect(later[3]!.data).toMatchObject({ willContinue: true });
		// What the model was sent: the error result (faux/echo answers with the results it got).
		expect(end.data.messages.at(-1).content[0].text).toBe(
			"Tool results: write_once (error): The tool call was interrupted by a server restart before its result was recorded; it may or may not have taken effect.",
		);
		expect(endpoint.calls).toEqual(["/write_once"]);
	});

	it("mid-tool, an idempotent tool: it is called again and the model gets its result", {
		timeout: 90_000,
	}, async () => {
		const { endpoint, base, end, later } = await killMidTool("read_again", 2);
		expect(later[0]!.data).toMatchObject({ toolName: "read_again", isError: false });
		expect(end.data.messages.at(-1).content[0].text).toBe("Tool results: read_again: done 2");
		expect(endpoint.calls).toEqual(["/read_again", "/read_again"]);
		const transcript = (await json(`${base}/messages`)).body.messages;
		expect(transcript.map((m: any) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
	});
});

describe("the client's streamPrompt across the crash", () => {
	it("resumes after the restart and ends at the continued run's agent_end, every event once", {
		timeout: 90_000,
	}, async () => {
		const options = { ...(await setup(undefined, { WHEELHOUSE_FAUX_DELAY_MS: "40" })), port: await freePort() };
		const first = await startMain(options);
		const id = (await json(`${first.url}/v1/sessions`, "POST", {})).body.id;
		const words = Array.from({ length: 30 }, (_, i) => `v${i}`).join(" ");
		const received: ReceivedEvent[] = [];
		let restarted: Promise<unknown> | undefined;
		for await (const event of streamPrompt({
			baseUrl: first.url,
			sessionId: id,
			message: words,
			retryDelayMs: 200,
			maxRetries: 100,
		})) {
			received.push(event);
			if (!restarted && received.filter((e) => e.type === "message_update").length === 3) {
				first.child.kill("SIGKILL");
				restarted = first.exited.then(() => startMain(options));
			}
		}
		await restarted;
		const ids = received.map((e) => e.id!);
		expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
		const names = received.map((e) => e.type);
		expect(names.filter((n) => n === "agent_start" || n === "run_interrupted" || n === "agent_end")).toEqual([
			"agent_start",
			"run_interrupted",
			"agent_start",
			"agent_end",
		]);
		const end = received.at(-1)!;
		expect(end.type).toBe("agent_end");
		expect((end.data as any).messages.at(-1).content[0].text).toBe(words);
	});
});

describe('onInterrupt: "stop"', () => {
	it("keeps today's behaviour: run_interrupted (willContinue false), the error result, no new run until continue", {
		timeout: 90_000,
	}, async () => {
		const endpoint = await toolEndpoint();
		const options = await setup(endpoint.url);
		const first = await startMain(options);
		const id = (await json(`${first.url}/v1/sessions`, "POST", { onInterrupt: "stop" })).body.id;
		const events = await openSse(`${first.url}/v1/sessions/${id}/events`);
		await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: '/tool read_again {"n": 3}' });
		await events.waitForType("tool_execution_start", 15_000);
		await expect.poll(() => endpoint.calls.length, { timeout: 10_000 }).toBe(1);
		const lastSeen = events.events.at(-1)!.id!;
		events.close();
		first.child.kill("SIGKILL");
		await first.exited;

		const second = await startMain(options);
		const base = `${second.url}/v1/sessions/${id}`;
		const resumed = await openSse(`${base}/events`, { headers: { "last-event-id": String(lastSeen) } });
		const interrupted = await resumed.waitForType("run_interrupted", 15_000);
		await new Promise((resolve) => setTimeout(resolve, 500));
		expect(eventsAfter(resumed.events, lastSeen).map((e) => e.event)).toEqual([
			"tool_execution_end",
			"message_start",
			"message_end",
			"run_interrupted",
		]);
		expect(interrupted.data).toMatchObject({ reason: "server_restart", willContinue: false });
		expect(interrupted.data.message).toMatch(/onInterrupt policy is stop.*POST \/v1\/sessions\/:id\/continue/);
		expect((await json(base)).body).toMatchObject({ status: "interrupted", onInterrupt: "stop" });
		// Even an idempotent tool is not run again: nothing continues.
		expect(endpoint.calls).toEqual(["/read_again"]);

		expect((await json(`${base}/continue`, "POST")).status).toBe(202);
		const end = await resumed.waitFor((e) => e.event === "agent_end" && e.id! > interrupted.id!, 15_000);
		expect(end.data.messages.at(-1).content[0].text).toMatch(
			/^Tool results: read_again \(error\): The tool call was interrupted by a server restart before its result was recorded/,
		);
		resumed.close();
	});
});

describe("the onInterrupt setting", () => {
	it("defaults to continue, is set on create and by PATCH, and a bad value is a 400 with the envelope", async () => {
		inProcess = await startServer();
		const created = await inProcess.request("POST", "/v1/sessions", { body: {} });
		expect(created.body.onInterrupt).toBe("continue");
		const stop = await inProcess.request("POST", "/v1/sessions", { body: { onInterrupt: "stop" } });
		expect([stop.status, stop.body.onInterrupt]).toEqual([201, "stop"]);

		const patched = await inProcess.request("PATCH", `/v1/sessions/${created.body.id}`, {
			body: { onInterrupt: "stop" },
		});
		expect([patched.status, patched.body.onInterrupt]).toEqual([200, "stop"]);
		expect((await inProcess.request("GET", `/v1/sessions/${created.body.id}`)).body.onInterrupt).toBe("stop");

		for (const bad of [
			{ method: "PATCH", path: `/v1/sessions/${created.body.id}` },
			{ method: "POST", path: "/v1/sessions" },
		]) {
			const res = await inProcess.request(bad.method, bad.path, { body: { onInterrupt: "retry" } });
			expect(res.status).toBe(400);
			expect(res.body.error).toMatchObject({ code: "VALIDATION_FAILED" });
			expect(res.body.error.message).toMatch(/onInterrupt.*continue, stop/);
		}
	});
});
