/**
 * The one channel a session's events are observed through (`session/observers.ts`): every
 * observer gets the events in the log's order, also when an observer publishes while an event is
 * being delivered; an observer that throws is removed and stops nothing else; the ends of a
 * session reach the observers added, not the session's own.
 */
import type { BaseEvent } from "@ag-ui/core";
import type { FastifyBaseLogger } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentEvent } from "../../../src/agent/types.js";
import type { SessionExtension } from "../../../src/server/runtime/session/live-session.js";
import { type SessionEvent, SessionObservers } from "../../../src/server/runtime/session/observers.js";
import { aguiAgent, quietConsole, runOnce } from "../../helpers/agui.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

const KEY = "observers-test-key";

const silent = { error() {}, warn() {}, info() {}, debug() {} } as unknown as FastifyBaseLogger;

function event(id: number, type = "queue_update"): SessionEvent {
	return { sessionId: "s1", id, type, data: "{}", frame: `id: ${id}\n\n`, runSeq: 1 };
}

describe("SessionObservers", () => {
	it("delivers an event published during a delivery after the current one reached every observer", () => {
		const own: string[] = [];
		const channel = new SessionObservers("s1", silent, [{ event: (e) => own.push(`own:${e.id}`) }]);
		const seen: string[] = [];
		channel.observe({
			event(e) {
				seen.push(`a:${e.id}`);
				if (e.id === 1) channel.deliver(event(2)); // publishes while 1 is delivered
			},
		});
		channel.observe({ event: (e) => seen.push(`b:${e.id}`) });
		channel.deliver(event(1));
		expect(seen).toEqual(["a:1", "b:1", "a:2", "b:2"]);
		expect(own).toEqual(["own:1", "own:2"]);
	});

	it("removes an observer that throws; the others and the session's own go on", () => {
		const own: number[] = [];
		const channel = new SessionObservers("s1", silent, [
			{
				event(e) {
					own.push(e.id);
					throw new Error("own observers are never removed");
				},
			},
		]);
		let thrown = 0;
		const seen: number[] = [];
		channel.observe({
			event() {
				thrown++;
				throw new Error("fails on purpose");
			},
		});
		channel.observe({ event: (e) => seen.push(e.id) });
		channel.deliver(event(1));
		channel.deliver(event(2));
		expect(thrown).toBe(1);
		expect(seen).toEqual([1, 2]);
		expect(own).toEqual([1, 2]);
		expect(channel.count).toBe(1);
	});

	it("starts an observer added during a delivery with the next event; one removed gets nothing more", () => {
		const channel = new SessionObservers("s1", silent);
		const late: number[] = [];
		const removed: number[] = [];
		let removeOther: () => void = () => {};
		channel.observe({
			event(e) {
				if (e.id === 1) {
					channel.observe({ event: (x) => late.push(x.id) });
					removeOther();
				}
			},
		});
		removeOther = channel.observe({ event: (e) => removed.push(e.id) });
		channel.deliver(event(1));
		channel.deliver(event(2));
		expect(late).toEqual([2]);
		expect(removed).toEqual([]);
	});

	it("ends the observers added (close, or leaseLost where given) and keeps the session's own", () => {
		const own: number[] = [];
		const channel = new SessionObservers("s1", silent, [{ event: (e) => own.push(e.id) }]);
		const ends: string[] = [];
		channel.observe({ event() {}, close: (reason) => ends.push(`closed: ${reason}`) });
		channel.observe({ event() {}, close: () => ends.push("closed"), leaseLost: () => ends.push("lease lost") });
		channel.leaseLost();
		expect(ends).toEqual(["closed: session lease lost", "lease lost"]);
		expect(channel.count).toBe(0);
		channel.deliver(event(7));
		expect(own).toEqual([7]);
	});

	it("hands an agent event the log could not store only to observers that take such events", () => {
		const unlogged: string[] = [];
		const channel = new SessionObservers("s1", silent, [
			{ event() {}, unlogged: (e) => unlogged.push(`own:${e.type}`) },
		]);
		channel.observe({ event() {}, unlogged: (e) => unlogged.push(`facade:${e.type}`) });
		channel.observe({ event: () => unlogged.push("a stream must not see it") });
		channel.deliverUnlogged({ type: "agent_end", messages: [] } as AgentEvent);
		expect(unlogged).toEqual(["facade:agent_end", "own:agent_end"]);
	});
});

describe("observers of a running session", () => {
	let server: TestServer;
	let console_: ReturnType<typeof quietConsole>;
	beforeEach(() => {
		console_ = quietConsole();
	});
	afterEach(async () => {
		try {
			console_.check();
		} finally {
			console_.restore();
			await server?.close();
		}
	});

	/** Publishes a server event from `onEvent` as each turn ends (while that event is delivered). */
	const publishing: SessionExtension = {
		name: "publishes-from-onEvent",
		events: ["turn_end"],
		onEvent(session, e) {
			if (e.type === "turn_end") {
				session.publish("queue_update", {
					action: "cleared",
					kind: "all",
					entries: [],
					steeringCount: 0,
					followUpCount: 0,
				});
			}
		},
	};

	it("a facade sees an event published from an extension's onEvent after the event, as the log has them", async () => {
		server = await startServer({ config: { apiKeys: [KEY] }, extensions: [publishing] });
		// The native stream: the log's order.
		const created = await server.request("POST", "/v1/sessions", { key: KEY, body: {} });
		const run = await promptSse(server.url, created.body.id, { message: "hello there" }, KEY);
		await run.waitForEnd();
		const wire = run.events.map((e) => e.event);
		expect(wire.indexOf("queue_update")).toBe(wire.indexOf("turn_end") + 1);

		// AG-UI reads agent events and server events from the same channel: the same order.
		const { agent } = aguiAgent(server, KEY);
		agent.addMessage({ id: "u1", role: "user", content: "hello there" });
		const { events } = await runOnce(agent);
		const types: string[] = events.map((e: BaseEvent) => e.type);
		const end = types.indexOf("STEP_FINISHED");
		const custom = types.indexOf("CUSTOM");
		expect(end).toBeGreaterThan(-1);
		expect(custom).toBe(end + 1);
	});
});
