/**
 * The SSE event names are a documented, closed list (`SSE_EVENT_NAMES`), and a generic client that
 * subscribes to them gets every event: a scenario that makes the server send every kind of event
 * (a run with tool progress, steering, an approval, a client tool's wait, a compaction, a snapshot,
 * a dropped subscriber) is watched by a raw reader and by the real `eventsource` package. Every name seen is in the list, the list is
 * in docs/events.md, `EventSource` gets every event through the listed names and nothing through
 * `onmessage` (heartbeat comments and `retry:` dispatch nothing, no frame has empty data).
 */
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { get, type IncomingMessage } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Type } from "@sinclair/typebox";
import { EventSource } from "eventsource";
import { afterEach, expect, it } from "vitest";
import type { AgentTool } from "../../../src/agent/types.js";
import { SSE_EVENT_NAMES } from "../../../src/wire/events.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, type SseReader } from "../../helpers/sse.js";

const readme = readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/events.md"), "utf8");

/**
 * Names this scenario does not make the server send, each with the reason (a name that needs a
 * restart, say, is tested where that happens). Every other listed name must be seen here.
 */
const NOT_IN_SCENARIO: string[] = [
	// Sent at the start after a crash: test/server/runtime/approvals-restart.test.ts kills a real process for it.
	"run_interrupted",
	// Sent by a rewind, a regenerate or an edit: test/server/runtime/rewind.test.ts streams and resumes across them.
	"transcript_rewound",
	// Sent only with auth.admission "queue" past a run limit: test/server/runtime/admission.test.ts waits for it.
	"run_queued",
	// Sent when an MCP server asks for input during a tool call: test/server/runtime/mcp-elicitation.test.ts runs one.
	"elicitation_requested",
	"elicitation_resolved",
];

let server: TestServer | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
	for (const cleanup of cleanups.splice(0)) cleanup();
	await server?.close();
	server = undefined;
});

/** A tool that reports progress once before it returns (`tool_execution_update`). */
const progressTool: AgentTool<any> = {
	name: "report_progress",
	label: "Report progress",
	description: "Reports progress, then finishes.",
	parameters: Type.Object({}),
	execute: async (_id, _params, _signal, onUpdate) => {
		onUpdate?.({ content: [{ type: "text", text: "half way" }], details: {} });
		return { content: [{ type: "text", text: "done" }], details: {} };
	},
};

interface Received {
	id: string;
	event: string;
	data: string;
}

/** An `eventsource` client that listens to every documented name, and counts `message` dispatches. */
function genericClient(url: string) {
	const source = new EventSource(url);
	cleanups.push(() => source.close());
	const received: Received[] = [];
	const unnamed: string[] = [];
	let waiter: (() => void) | undefined;
	source.onmessage = (e) => unnamed.push(e.data);
	for (const name of SSE_EVENT_NAMES) {
		source.addEventListener(name, (e) => {
			received.push({ id: e.lastEventId, event: e.type, data: e.data });
			waiter?.();
		});
	}
	/** Resolves once an event with id `id` has been received. */
	const waitForId = async (id: number) => {
		while (!received.some((e) => e.id === String(id))) {
			await new Promise<void>((resolve, reject) => {
				const timer = setTimeout(() => reject(new Error(`EventSource never got id ${id}`)), 5000);
				waiter = () => {
					clearTimeout(timer);
					resolve();
				};
			});
		}
	};
	return { received, unnamed, waitForId };
}

it("every name the server sends is listed and documented; EventSource gets every event through the listed names", async () => {
	server = await startServer({
		tools: [progressTool],
		config: { heartbeatMs: 10, tools: { approval: { calculate: "always" } } },
	});
	const s = server;
	const clientTools = [{ name: "pick_color", description: "Ask the user to pick a color" }];
	const id = (await s.request("POST", "/v1/sessions", { body: { clientTools } })).body.id;
	const eventsUrl = `${s.url}/v1/sessions/${id}/events`;

	const raw: SseReader = await openSse(eventsUrl);
	cleanups.push(() => raw.close());
	await raw.waitForType("session_snapshot");
	const generic = genericClient(eventsUrl);
	await generic.waitForId(0); // its snapshot: nothing happened yet

	// Steering queued while idle, then cleared; a run whose tool reports progress.
	expect((await s.request("POST", `/v1/sessions/${id}/steer`, { body: { message: "and then?" } })).status).toBe(202);
	expect((await s.request("DELETE", `/v1/sessions/${id}/queue`)).status).toBe(200);
	await s.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "/tool report_progress {}" } });
	await raw.waitFor((e) => e.event === "agent_end");
	// A call that waits for approval.
	await s.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: '/tool calculate {"expression":"6*7"}' } });
	const requested = await raw.waitForType("approval_requested");
	await s.request("POST", `/v1/sessions/${id}/approvals/${requested.data.toolCallId}`, { body: { approve: true } });
	await raw.waitFor((e) => e.event === "agent_end" && e.id !== undefined && e.id > requested.id!);
	// A client tool's call that waits for its result.
	await s.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "/tool pick_color {}" } });
	const wait = await raw.waitForType("tool_result_requested");
	await s.request("POST", `/v1/sessions/${id}/tool-results/${wait.data.toolCallId}`, { body: { content: "teal" } });
	await raw.waitFor((e) => e.event === "agent_end" && e.id !== undefined && e.id > wait.id!);
	// A compaction asked for (the stand-in model echoes the summary request back as the summary).
	expect((await s.request("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 0 } })).status).toBe(200);
	await raw.waitForType("compaction_end");
	const lastId = (await s.request("GET", `/v1/sessions/${id}`)).body.lastEventId;
	await generic.waitForId(lastId);

	// A subscriber of another session that never reads, dropped once a large run outruns its buffer.
	const other = (await s.request("POST", "/v1/sessions", { body: {} })).body.id;
	const stalled = await new Promise<IncomingMessage>((resolve, reject) => {
		const req = get(`${s.url}/v1/sessions/${other}/events`, { agent: false, headers: { accept: "text/event-stream" } });
		req.on("response", resolve).on("error", reject);
	});
	cleanups.push(() => stalled.destroy());
	await s.request("POST", `/v1/sessions/${other}/prompt`, { body: { message: "x".repeat(1536 * 1024) } });
	await s.app.wheelhouse.sessions.get(other, null).waitForIdle();
	stalled.setEncoding("utf8");
	let stalledText = "";
	stalled.on("data", (chunk: string) => {
		stalledText += chunk;
	});
	await once(stalled, "end");
	const stalledNames = [...stalledText.matchAll(/^event: (.*)$/gm)].map((m) => m[1]);
	expect(stalledNames.at(-1)).toBe("stream_dropped");

	// Every name seen is listed; every listed name was seen (or is known not to be in this scenario).
	const seen = new Set([...raw.types(), ...stalledNames]);
	for (const name of seen) expect(SSE_EVENT_NAMES, `"${name}" is sent but not listed`).toContain(name);
	expect([...seen].sort()).toEqual(SSE_EVENT_NAMES.filter((n) => !NOT_IN_SCENARIO.includes(n)).sort());
	// Every frame that carries data is named.
	expect(raw.events.every((e) => e.event !== "message" && e.event !== "")).toBe(true);

	// The generic client got exactly what the raw reader got, all through the listed names; nothing
	// reached `onmessage`, and no event came with empty data (the heartbeats and `retry:` did not dispatch).
	expect(raw.retry).toBeGreaterThan(0);
	expect(raw.comments.length).toBeGreaterThan(0); // heartbeats every 10 ms during the whole scenario
	expect(generic.unnamed).toEqual([]);
	expect(generic.received.map((e) => [Number(e.id), e.event])).toEqual(raw.events.map((e) => [e.id, e.event]));
	expect(generic.received.every((e) => e.data.length > 0)).toBe(true);
	// (The two snapshots were taken a moment apart: their state may differ.)
	const payloads = (events: { event: string; data: unknown }[]) =>
		events.filter((e) => e.event !== "session_snapshot").map((e) => e.data);
	expect(payloads(generic.received.map((e) => ({ event: e.event, data: JSON.parse(e.data) })))).toEqual(
		payloads(raw.events),
	);
});

it("docs/events.md lists exactly the event names the server sends", () => {
	const start = readme.indexOf("| event | sent when |");
	expect(start, "docs/events.md has the table of event names").toBeGreaterThan(-1);
	const names: string[] = [];
	for (const line of readme.slice(start).split("\n").slice(2)) {
		if (!line.startsWith("|")) break;
		names.push(/^\| `([a-z_]+)`/.exec(line)![1]);
	}
	expect(names).toEqual([...SSE_EVENT_NAMES]);
});
