/**
 * Session extensions get the agent events they asked for: `events` names the types `onEvent`
 * takes (all when absent), `onFirstUpdate` sees the first streamed update of each message, and an
 * extension that throws stops neither the others nor the run.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AgentEvent } from "../../../src/agent/types.js";
import type { SessionExtension } from "../../../src/server/runtime/session/live-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

const servers: TestServer[] = [];
afterEach(async () => {
	for (const server of servers.splice(0)) await server.close();
});

/** An extension that records what it is handed; `throws` makes every hook throw after recording. */
function recorder(name: string, events?: AgentEvent["type"][], throws = false) {
	const seen: string[] = [];
	const firstUpdates: string[] = [];
	const extension: SessionExtension = {
		name,
		...(events ? { events } : {}),
		onEvent(_session, event) {
			seen.push(event.type);
			if (throws) throw new Error(`${name} fails on purpose`);
		},
		onFirstUpdate(_session, event) {
			firstUpdates.push(event.assistantMessageEvent.type);
			if (throws) throw new Error(`${name} fails on purpose`);
		},
	};
	return { extension, seen, firstUpdates };
}

describe("session extension events", () => {
	it("hands each extension only the types it names, every type to one that names none, and the first update of each message once", async () => {
		const everything = recorder("everything");
		const some = recorder("some", ["agent_start", "message_end", "agent_end"]);
		const failing = recorder("failing", ["agent_start", "message_end", "agent_end"], true);
		const after = recorder("after-the-failing-one", ["agent_end"]);
		const server = await startServer({
			extensions: [everything.extension, failing.extension, some.extension, after.extension],
		});
		servers.push(server);
		const created = await server.request("POST", "/v1/sessions", { body: {} });
		// The faux model calls the tool, then answers: two assistant messages, each streamed.
		const run = await promptSse(server.url, created.body.id, {
			message: '/tool calculate {"expression": "6 * 7"}',
		});
		await run.waitForEnd();

		// What the client saw is what the extension without `events` saw, in the same order.
		const wire = run.types();
		const agentTypes = new Set(everything.seen);
		expect(everything.seen).toEqual(wire.filter((type) => agentTypes.has(type)));
		expect(everything.seen.filter((type) => type === "message_update").length).toBeGreaterThan(2);
		expect(everything.seen).toContain("tool_execution_end");

		const named = ["agent_start", "message_end", "agent_end"];
		expect(some.seen).toEqual(everything.seen.filter((type) => named.includes(type)));
		// The throwing extension was called for every event it asked for, and stopped no one.
		expect(failing.seen).toEqual(some.seen);
		expect(after.seen).toEqual(["agent_end"]);

		// Two streamed assistant messages: one first update each, for every extension with the hook.
		const assistantStarts = everything.seen.filter((type, i) => {
			return type === "message_start" && everything.seen[i + 1] === "message_update";
		}).length;
		expect(assistantStarts).toBe(2);
		for (const ext of [everything, some, failing, after]) {
			expect(ext.firstUpdates).toHaveLength(2);
		}
		// The run itself was unharmed by the throwing hooks.
		expect(wire.at(-1)).toBe("agent_end");
		const state = await server.request("GET", `/v1/sessions/${created.body.id}`);
		expect(state.body.status).toBe("idle");
	});
});
