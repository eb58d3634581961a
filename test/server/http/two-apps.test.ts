/**
 * Two `buildApp` instances in one process share nothing: each has its own SQLite file, runs go on
 * in both at once, and no event, durability barrier or timer of one reaches the other — A's events
 * never appear on B's streams, a write pass of one app syncs only its own store, and closing A
 * leaves B serving. Real servers on ephemeral ports, real database files; the model is scripted.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { registerFauxProvider } from "../../../src/ai/providers/faux.js";
import { openSqliteStore, type SqliteSessionStore } from "../../../src/store/sqlite/index.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse, type SseEvent, type SseReader } from "../../helpers/sse.js";

const faux = registerFauxProvider({ api: "two-apps-faux", provider: "two-apps" });
const MODEL = `two-apps/${faux.getModel().id}`;

interface Side {
	name: string;
	store: SqliteSessionStore;
	server: TestServer;
	/** Calls of this store's `sync()` so far. */
	syncs: () => number;
	/** Reads of this store's `syncPending` so far: each write pass asks its barriers whether a commit is due. */
	asks: () => number;
}

let dir: string;
let sides: Side[] = [];
const readers: SseReader[] = [];

/** Counts the calls of `store.sync()` (the durability barrier the app's write passes run). */
function countSyncs(store: SqliteSessionStore): () => number {
	let calls = 0;
	const sync = store.sync.bind(store);
	store.sync = () => {
		calls++;
		return sync();
	};
	return () => calls;
}

/**
 * Counts the reads of `store.syncPending`: a write pass asks each of its barriers whether it has
 * work before it writes (and runs `sync()` only when it has, which depends on timing: a commit at
 * the end of an event-loop turn may have taken everything already).
 */
function countAsks(store: SqliteSessionStore): () => number {
	let reads = 0;
	let proto: object | null = Object.getPrototypeOf(store);
	let getter: (() => boolean) | undefined;
	while (proto && !getter) {
		getter = Object.getOwnPropertyDescriptor(proto, "syncPending")?.get;
		proto = Object.getPrototypeOf(proto);
	}
	if (!getter) throw new Error("the store has no syncPending getter");
	const read = getter;
	Object.defineProperty(store, "syncPending", {
		configurable: true,
		get() {
			reads++;
			return read.call(store);
		},
	});
	return () => reads;
}

async function side(name: string): Promise<Side> {
	const store = openSqliteStore({ path: path.join(dir, `${name}.db`) });
	const syncs = countSyncs(store);
	const asks = countAsks(store);
	const server = await startServer({ store, models: [faux.getModel()], config: { defaultModel: MODEL } });
	return { name, store, server, syncs, asks };
}

/** A scripted turn that echoes the last user message word by word, slowly enough to overlap. */
const echoTurn = (gate?: Promise<void>) => async (context: { messages: unknown[] }) => {
	await gate;
	const last = context.messages.at(-1) as { content: string | { type: string; text?: string }[] };
	const text = typeof last.content === "string" ? last.content : (last.content[0]?.text ?? "");
	return { content: `${text} ${text} ${text}`, delayMs: 2 };
};

const textOf = (events: SseEvent[]) => JSON.stringify(events.map((e) => e.data));
const idsOf = (events: SseEvent[]) => events.map((e) => e.id).filter((id): id is number => id !== undefined);

beforeEach(async () => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-two-apps-"));
	sides = [await side("a"), await side("b")];
});
afterEach(async () => {
	for (const reader of readers.splice(0)) reader.close();
	for (const s of sides) {
		await s.server.close();
		s.store.close();
	}
	sides = [];
	faux.setResponses([]);
	rmSync(dir, { recursive: true, force: true });
});

describe("two apps in one process", () => {
	it("runs in both at once: each app's streams carry only its own events, with its own store's ids", async () => {
		const [a, b] = sides;
		// Both model calls wait until both have begun: the two runs are in flight together.
		let begun = 0;
		let bothBegun!: () => void;
		const gate = new Promise<void>((resolve) => {
			bothBegun = resolve;
		});
		const gated = echoTurn(gate);
		faux.setResponses(
			[0, 1].map(() => (context: { messages: unknown[] }) => {
				if (++begun === 2) bothBegun();
				return gated(context);
			}),
		);
		const idA = (await a.server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const idB = (await b.server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const eventsA = await openSse(`${a.server.url}/v1/sessions/${idA}/events`);
		const eventsB = await openSse(`${b.server.url}/v1/sessions/${idB}/events`);
		readers.push(eventsA, eventsB);
		const [runA, runB] = await Promise.all([
			promptSse(a.server.url, idA, { message: "alpha-from-a" }),
			promptSse(b.server.url, idB, { message: "bravo-from-b" }),
		]);
		readers.push(runA, runB);
		await Promise.all([runA.waitForEnd(), runB.waitForEnd()]);
		await Promise.all([eventsA.waitForType("agent_end"), eventsB.waitForType("agent_end")]);
		expect(begun).toBe(2);

		for (const [mine, stream, own, other] of [
			[a, [runA, eventsA], "alpha-from-a", "bravo-from-b"],
			[b, [runB, eventsB], "bravo-from-b", "alpha-from-a"],
		] as const) {
			const sessionId = mine === a ? idA : idB;
			const lastLogged = mine.store.lastEventId(sessionId);
			for (const reader of stream) {
				expect(textOf(reader.events)).toContain(`${own} ${own} ${own}`);
				expect(textOf(reader.events)).not.toContain(other);
				// The ids are its own log's, one after the other up to the last it logged: no event of
				// the other app slipped in between.
				const ids = idsOf(reader.events);
				expect(ids.at(-1)).toBe(lastLogged);
				expect(ids).toEqual(ids.map((_, i) => ids[0] + i));
			}
			const answer = (await mine.server.request("GET", `/v1/sessions/${sessionId}/messages`)).body.messages;
			expect(JSON.stringify(answer)).not.toContain(other);
		}
	});

	it("a write pass of one app runs only its own store's barrier", async () => {
		const [a, b] = sides;
		faux.setResponses([echoTurn()]);
		const idB = (await b.server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const eventsB = await openSse(`${b.server.url}/v1/sessions/${idB}/events`);
		readers.push(eventsB);
		const syncsA = a.syncs();
		const asksA = a.asks();
		const asksB = b.asks();
		const run = await promptSse(b.server.url, idB, { message: "only b works now" });
		readers.push(run);
		await run.waitForEnd();
		await eventsB.waitForType("agent_end");
		expect(run.events.at(-1)?.event).toBe("agent_end");
		// B's passes asked B's store whether a commit was due before they wrote (and synced it when
		// one was); A, idle, was neither asked nor synced.
		expect(b.asks()).toBeGreaterThan(asksB);
		expect(a.asks()).toBe(asksA);
		expect(a.syncs()).toBe(syncsA);
	});

	it("closing one app leaves the other serving: its open streams, its running run and new runs", async () => {
		const [a, b] = sides;
		let release!: () => void;
		const held = new Promise<void>((resolve) => {
			release = resolve;
		});
		faux.setResponses([echoTurn(held), echoTurn()]);
		const idA = (await a.server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const idB = (await b.server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const eventsA = await openSse(`${a.server.url}/v1/sessions/${idA}/events`);
		const eventsB = await openSse(`${b.server.url}/v1/sessions/${idB}/events`);
		readers.push(eventsA, eventsB);
		// B's run is in flight (its model call held) when A closes.
		const runB = await promptSse(b.server.url, idB, { message: "b keeps going" });
		readers.push(runB);
		await runB.waitForType("agent_start");
		await a.server.close();
		a.store.close();
		sides = [b];
		await eventsA.waitForEnd();
		const syncsAfterClose = a.syncs();

		release();
		await runB.waitForEnd();
		expect(runB.events.at(-1)?.event).toBe("agent_end");
		expect(textOf(runB.events)).toContain("b keeps going b keeps going");
		// A new run on B, seen on B's stream that was open all along.
		const again = await promptSse(b.server.url, idB, { message: "and again" });
		readers.push(again);
		await again.waitForEnd();
		expect(again.events.at(-1)?.event).toBe("agent_end");
		await eventsB.waitFor((e) => e.event === "message_end" && JSON.stringify(e.data).includes("and again and again"));
		expect(eventsB.ended).toBe(false);
		// Nothing of B's work reached A's closed store.
		expect(a.syncs()).toBe(syncsAfterClose);
	});
});
