/**
 * A `202` for a steering or follow-up message is a promise: whatever moment the server dies at,
 * every acknowledged message is afterwards either still queued or in the transcript, exactly once.
 *
 * A real server in a child process (test/server/fixtures/churn-server.ts) on one SQLite file runs
 * the `faux/echo` model, which answers every drained message with a turn of its own, so the run
 * keeps going as long as messages arrive. Clients send steering and follow-up messages (and
 * prompts that queue when busy or start a run when idle) without pause, each with a unique text,
 * and note every one acknowledged. The server is SIGKILLed at seeded random moments and restarted
 * on the same file; at the end the file is opened with the real store and every acknowledged text
 * is looked for.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { Agent as HttpAgent, request } from "undici";
import { afterEach, expect, it } from "vitest";
import type { AgentMessage } from "../../../src/agent/types.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";

const KILLS = Number(process.env.CHURN_KILLS ?? 12);
const SEED = 0x5eed12;
const SENDERS = 4;
/** Answers a restarted server gives before the kill moment is counted from. */
const WARMUP_ACKS = 20;
const MAX_KILL_DELAY_MS = 300;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
	for (const child of children.splice(0))
		if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A small seeded generator (mulberry32): the kill moments are the same on every run. */
function seeded(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

interface ServerProcess {
	child: ChildProcess;
	/** Its modules are loaded; it waits for `start`. */
	loaded: Promise<void>;
	/** Opens the file and listens; resolves with the base URL. */
	start(): Promise<string>;
	exited: Promise<unknown>;
}

function spawnServer(db: string): ServerProcess {
	const child = spawn(
		process.execPath,
		["--import", "tsx", path.join(import.meta.dirname, "../fixtures", "churn-server.ts"), db],
		{ stdio: ["pipe", "pipe", "pipe"] },
	);
	children.push(child);
	let stderr = "";
	child.stderr!.on("data", (d) => {
		stderr += d;
	});
	const exited = once(child, "exit");
	const lines = createInterface({ input: child.stdout! });
	const line = (match: RegExp) =>
		new Promise<string>((resolve, reject) => {
			const onLine = (l: string) => {
				if (!match.test(l)) return;
				lines.off("line", onLine);
				resolve(l);
			};
			lines.on("line", onLine);
			exited.then(() => reject(new Error(`server exited before printing ${match}: ${stderr}`)));
		});
	const loaded = line(/^loaded$/).then(() => undefined);
	// A server spawned ahead and killed by the cleanup before it loaded is no failure.
	loaded.catch(() => undefined);
	return {
		child,
		loaded,
		exited,
		async start() {
			const listening = line(/^port \d+$/);
			child.stdin!.write("go\n");
			return `http://127.0.0.1:${(await listening).split(" ")[1]}`;
		},
	};
}

const ROUTES = [
	{ path: "steer", body: {} },
	{ path: "follow-up", body: {} },
	{ path: "prompt", body: { ifBusy: "steer" } },
	{ path: "prompt", body: { ifBusy: "followUp" } },
] as const;

/**
 * Sends messages without pause until a request fails (the server died); adds each text answered
 * with 202 to `acked`. Other answers (a full queue, a busy session between runs) are not promises.
 */
async function send(
	url: string,
	sessionId: string,
	dispatcher: HttpAgent,
	prefix: string,
	acked: Set<string>,
	onAck: () => void,
) {
	for (let n = 0; ; n++) {
		const text = `${prefix}-${n}`;
		const route = ROUTES[n % ROUTES.length]!;
		let status: number;
		try {
			const res = await request(`${url}/v1/sessions/${sessionId}/${route.path}`, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({ ...route.body, message: text }),
				dispatcher,
			});
			await res.body.dump();
			status = res.statusCode;
		} catch {
			return;
		}
		if (status === 202) {
			acked.add(text);
			onAck();
		} else if (status !== 409 && status !== 429) throw new Error(`unexpected ${status} for ${route.path}`);
	}
}

function userText(message: AgentMessage): string | undefined {
	if (message.role !== "user") return undefined;
	const content = message.content;
	return typeof content === "string" ? content : (content[0] as { text?: string } | undefined)?.text;
}

it("no acknowledged steering or follow-up message is lost or duplicated by SIGKILLs during churn", async () => {
	const dir = mkdtempSync(path.join(tmpdir(), "wh-steer-churn-"));
	dirs.push(dir);
	const db = path.join(dir, "wheelhouse.db");
	const random = seeded(SEED);
	const acked = new Set<string>();
	const ackedPerRun: number[] = [];
	let sessionId = "";

	let next = spawnServer(db);
	for (let k = 0; k < KILLS; k++) {
		const server = next;
		await server.loaded;
		const url = await server.start();
		if (k + 1 < KILLS) next = spawnServer(db); // loads while this one serves
		if (k === 0) {
			const res = await fetch(`${url}/v1/sessions`, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({ model: "faux/echo" }),
			});
			expect(res.status).toBe(201);
			sessionId = ((await res.json()) as { id: string }).id;
		}
		const before = acked.size;
		const dispatcher = new HttpAgent({ connections: SENDERS });
		let churning!: () => void;
		const churn = new Promise<void>((resolve) => {
			churning = resolve;
		});
		const onAck = () => {
			if (acked.size - before >= WARMUP_ACKS) churning();
		};
		const senders = Array.from({ length: SENDERS }, (_, s) =>
			send(url, sessionId, dispatcher, `r${k}s${s}`, acked, onAck),
		);
		// Killed at a seeded moment once the churn is under way (the first answers of a fresh process are slow).
		const killAfter = Math.floor(random() * MAX_KILL_DELAY_MS);
		await Promise.race([churn, server.exited]);
		await new Promise((resolve) => setTimeout(resolve, killAfter));
		server.child.kill("SIGKILL");
		const [, signal] = (await server.exited) as [number | null, NodeJS.Signals | null];
		expect(signal, "the server died before it was killed").toBe("SIGKILL");
		await Promise.all(senders);
		await dispatcher.destroy();
		ackedPerRun.push(acked.size - before);
	}

	// Every kill landed during churn.
	expect(
		ackedPerRun.every((n) => n >= WARMUP_ACKS),
		`acknowledged per server: ${ackedPerRun}`,
	).toBe(true);

	const store = openSqliteStore({ path: db });
	try {
		const seen = new Map<string, number>();
		const note = (message: AgentMessage) => {
			const text = userText(message);
			if (text !== undefined) seen.set(text, (seen.get(text) ?? 0) + 1);
		};
		const total = (await store.countMessages(sessionId)) ?? 0;
		for (let offset = 0; offset < total; offset += 1000) {
			for (const m of (await store.listMessages(sessionId, { offset, limit: 1000 }))?.messages ?? []) note(m);
		}
		const queued = await store.listQueued(sessionId);
		for (const entry of queued) note(entry.message);

		const lost = [...acked].filter((text) => !seen.has(text));
		const duplicated = [...seen].filter(([, n]) => n > 1).map(([text]) => text);
		expect({ lost, duplicated }, `${acked.size} acknowledged over ${KILLS} kills`).toEqual({
			lost: [],
			duplicated: [],
		});
		// The churn drained messages into the transcript (not just queued them).
		expect(seen.size - queued.length).toBeGreaterThan(KILLS * 10);
	} finally {
		store.close();
	}
}, 300_000); // the process starts dominate, and take far longer on a loaded machine
