// Each test starts a server process through tsx's loader: seconds on a busy 2-core machine.
/**
 * Graceful shutdown of the real entry (src/main.ts, run by node with tsx's loader, one process):
 * SIGTERM (or SIGINT) while a prompt streams → the stream still receives its `agent_end` (the run finishes
 * within the grace period, or is aborted after it) and the process exits 0.
 */
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MessageAssembler } from "../../../src/client/message-assembler.js";
import { streamPrompt } from "../../../src/client/session-streams.js";
import { openSqliteStore } from "../../../src/store/sqlite/index.js";
import { type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";

const dirs: string[] = [];

afterEach(() => {
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The server on a fresh SQLite file in a temporary folder. */
async function startServer(env: Record<string, string>): Promise<MainProcess & { db: string }> {
	const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-shutdown-"));
	dirs.push(dir);
	const db = path.join(dir, "wheelhouse.db");
	return { ...(await startMain({ db, env })), db };
}

async function createSession(url: string): Promise<string> {
	const res = await fetch(`${url}/v1/sessions`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ model: "faux/echo" }),
	});
	expect(res.status).toBe(201);
	return ((await res.json()) as { id: string }).id;
}

/** Streams a prompt, sends `stopSignal` at its first text delta, and returns what the stream saw and the exit. */
async function signalMidStream(stopSignal: NodeJS.Signals, words: number, env: Record<string, string>) {
	const server = await startServer(env);
	const exited = once(server.child, "exit");
	const id = await createSession(server.url);
	const message = Array.from({ length: words }, (_, i) => `word${i}`).join(" ");
	const assembler = new MessageAssembler();
	const types: string[] = [];
	let signalled = false;
	let agentEnd: any;
	for await (const event of streamPrompt({ baseUrl: server.url, sessionId: id, message, reconnect: false })) {
		types.push(event.type);
		const expanded = assembler.apply(event.data);
		if (!signalled && expanded.type === "message_update" && expanded.assistantMessageEvent.type === "text_delta") {
			signalled = true;
			server.child.kill(stopSignal);
		}
		if (expanded.type === "agent_end") agentEnd = expanded;
	}
	const [code, signal] = await exited;
	return { types, agentEnd, assembler, code, signal, output: server.output(), db: server.db, sessionId: id };
}

describe("graceful shutdown (SIGTERM / SIGINT)", () => {
	it("aborts a run that outlasts the grace period: the stream gets agent_end, the process exits 0", async () => {
		const result = await signalMidStream("SIGTERM", 400, {
			WHEELHOUSE_FAUX_DELAY_MS: "25",
			WHEELHOUSE_SHUTDOWN_GRACE_MS: "300",
		});
		expect(result.types.at(-1)).toBe("agent_end");
		const last = result.agentEnd.messages.at(-1);
		expect(last.role).toBe("assistant");
		expect(last.stopReason).toBe("aborted");
		// The answer was cut short: fewer than the 400 words were streamed.
		expect(last.content[0]?.text?.split(" ").length ?? 0).toBeLessThan(400);
		expect(result.assembler.message).toEqual(last);
		expect({ code: result.code, signal: result.signal }, result.output).toEqual({ code: 0, signal: null });
	}, 60_000);

	it("with the default grace period, stops in time: the run is aborted with its agent_end, the store closed, exit 0", async () => {
		// 800 words at 25 ms: the run would last 20 s, longer than any grace period that fits in the
		// 10 s a container runtime allows.
		const result = await signalMidStream("SIGTERM", 800, { WHEELHOUSE_FAUX_DELAY_MS: "25" });
		expect({ code: result.code, signal: result.signal }, result.output).toEqual({ code: 0, signal: null });
		expect(result.types.at(-1)).toBe("agent_end");
		expect(result.agentEnd.messages.at(-1).stopReason).toBe("aborted");
		// The store was closed: its write-ahead log was checkpointed and removed, and the run is stored as aborted.
		expect(existsSync(`${result.db}-wal`)).toBe(false);
		const store = openSqliteStore({ path: result.db });
		try {
			expect((await store.listRuns(result.sessionId)).map((run) => run.status)).toEqual(["aborted"]);
			expect((await store.getSession(result.sessionId))?.status).toBe("idle");
		} finally {
			store.close();
		}
	}, 60_000);

	it("on SIGINT, lets a run that ends within the grace period finish normally, then exits 0", async () => {
		const result = await signalMidStream("SIGINT", 8, {
			WHEELHOUSE_FAUX_DELAY_MS: "20",
			WHEELHOUSE_SHUTDOWN_GRACE_MS: "10000",
		});
		expect(result.types.at(-1)).toBe("agent_end");
		const last = result.agentEnd.messages.at(-1);
		expect(last.stopReason).toBe("stop");
		expect(last.content[0].text.split(" ")).toHaveLength(8);
		expect({ code: result.code, signal: result.signal }, result.output).toEqual({ code: 0, signal: null });
	}, 60_000);

	it("does not wait for idle connections: one that never sent a request and a used keep-alive one are closed", async () => {
		const server = await startServer({});
		const exited = once(server.child, "exit");
		const { port } = new URL(server.url);
		// A connection opened ahead of use (as client pools and load balancers do), never used.
		const unused = connect(Number(port), "127.0.0.1");
		await once(unused, "connect");
		const unusedClosed = once(unused, "close");
		// A keep-alive connection whose request finished.
		const used = connect(Number(port), "127.0.0.1");
		await once(used, "connect");
		used.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n");
		await once(used, "data");
		const usedClosed = once(used, "close");
		server.child.kill("SIGTERM");
		// Both are ended by the server (this side never closes them), and the process exits 0.
		await Promise.all([unusedClosed, usedClosed]);
		const [code, signal] = await exited;
		expect({ code, signal }, server.output()).toEqual({ code: 0, signal: null });
	}, 30_000);
});
