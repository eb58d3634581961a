/**
 * A compaction cut short by a crash, with the real server process (src/main.ts on a SQLite file)
 * and a real model API (Chat Completions from a local server that plays the model): SIGKILLed
 * while the summary is being written, the session comes back interrupted with its transcript as
 * before (no half compaction); SIGKILLed after the compaction was stored, the next process sends
 * the stored summary and the kept messages without summarising again. Settings survive restarts.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { json, type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";
import { chatAnswer, type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { text400 } from "../../helpers/scripted-session.js";
import { openSse, type SseReader } from "../../helpers/sse.js";

let replay: ReplayServer;
const dirs: string[] = [];
const readers: SseReader[] = [];
beforeAll(async () => {
	replay = await startReplayServer();
});
afterEach(() => {
	for (const reader of readers.splice(0)) reader.close();
	stopAll();
	replay.reset();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
	await replay.close();
});

/** The text of each message of a Chat Completions request, with its role. */
function sent(index: number): { role: string; text: string }[] {
	const request = replay.requests[index]!.json as { messages: { role: string; content: unknown }[] };
	return request.messages.map((m) => ({
		role: m.role,
		text:
			typeof m.content === "string"
				? m.content
				: (m.content as { type: string; text?: string }[]).map((part) => part.text ?? "").join(""),
	}));
}

async function events(main: MainProcess, id: string, after?: number): Promise<SseReader> {
	const reader = await openSse(`${main.url}/v1/sessions/${id}/events`, {
		headers: after === undefined ? {} : { "last-event-id": String(after) },
	});
	readers.push(reader);
	return reader;
}

describe("a crash during a compaction", () => {
	it("leaves the transcript consistent; the next process compacts or uses the stored compaction", {
		timeout: 120_000,
	}, async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wh-compaction-restart-"));
		dirs.push(dir);
		const config = path.join(dir, "config.json");
		writeFileSync(
			config,
			JSON.stringify({
				models: [{ provider: "local", id: "tiny", baseUrl: `${replay.url}/v1`, contextWindow: 4000, maxTokens: 1000 }],
			}),
		);
		const options = { db: path.join(dir, "wh.db"), env: { WHEELHOUSE_CONFIG: config } };

		// 1. Two runs, the second answer reporting 2,950 tokens; the third prompt passes 3,000.
		const first = await startMain(options);
		const created = await json(`${first.url}/v1/sessions`, "POST", {
			model: "local/tiny",
			compaction: { reserveTokens: 1000, keepRecentTokens: 150 },
			budget: { maxTurnsPerRun: 50 },
			// What a client does after the crash is what this test is about.
			onInterrupt: "stop",
		});
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		const base1 = `${first.url}/v1/sessions/${id}`;
		const stream1 = await events(first, id);
		replay.enqueue(chatAnswer(text400("A1"), 500), chatAnswer(text400("A2"), 2950), { stall: true });
		for (const [n, prompt] of [
			[1, "U1"],
			[2, "U2"],
		] as const) {
			expect((await json(`${base1}/prompt`, "POST", { message: text400(prompt) })).status).toBe(202);
			await stream1.waitFor(
				(e) => e.event === "agent_end" && stream1.events.filter((x) => x.event === "agent_end").length === n,
				15_000,
			);
		}
		expect((await json(`${base1}/prompt`, "POST", { message: text400("U3") })).status).toBe(202);
		await stream1.waitForType("compaction_start", 15_000);
		await replay.waitForRequests(3);
		expect(sent(2).map((m) => m.role)).toEqual(["system", "user"]);
		expect(sent(2)[1]!.text).toContain(`<conversation>\n[User]: ${text400("U1")}\n[Assistant]: ${text400("A1")}`);
		const lastSeen = stream1.events.at(-1)!.id!;
		first.child.kill("SIGKILL");
		await first.exited;

		// 2. The session is interrupted; the transcript is what it was before the compaction.
		const second = await startMain(options);
		const base2 = `${second.url}/v1/sessions/${id}`;
		const state = (await json(base2)).body;
		expect(state.status).toBe("interrupted");
		expect(state.compaction).toMatchObject({ reserveTokens: 1000, keepRecentTokens: 150, last: null });
		expect(state.budget).toMatchObject({ maxTurnsPerRun: 50 });
		const messages = (await json(`${base2}/messages`)).body.messages as { role: string }[];
		expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
		const resumed = await events(second, id, lastSeen);
		await resumed.waitForType("run_interrupted", 15_000);
		expect(resumed.events.map((e) => e.event)).toEqual(["run_interrupted"]);

		// Continue: the compaction runs again, is stored, and the call after it hangs; kill again.
		replay.enqueue(chatAnswer("## Goal\nSUMMARY-R", 300), { stall: true });
		expect((await json(`${base2}/continue`, "POST")).status).toBe(202);
		const end = await resumed.waitForType("compaction_end", 15_000);
		expect(end.data).toMatchObject({ outcome: "compacted", reason: "threshold", messageIndex: 5 });
		await replay.waitForRequests(5);
		const expected = [
			{ role: "user", text: expect.stringContaining("SUMMARY-R") },
			{ role: "assistant", text: text400("A2") },
			{ role: "user", text: text400("U3") },
		];
		expect(sent(4)).toEqual(expected);
		second.child.kill("SIGKILL");
		await second.exited;

		// 3. The compaction message is stored; the next process sends its summary without a new one.
		const third = await startMain(options);
		const base3 = `${third.url}/v1/sessions/${id}`;
		const stored = (await json(`${base3}/messages`)).body.messages as { role: string; firstKeptIndex?: number }[];
		expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "compaction"]);
		expect(stored[5]!.firstKeptIndex).toBe(3);
		expect((await json(base3)).body.compaction.last).toMatchObject({ reason: "threshold", firstKeptIndex: 3 });
		const stream3 = await events(third, id);
		replay.enqueue(chatAnswer("FINAL", 400));
		expect((await json(`${base3}/continue`, "POST")).status).toBe(202);
		await stream3.waitForType("agent_end", 15_000);
		expect(replay.requests).toHaveLength(6);
		expect(sent(5)).toEqual(expected);
		const final = (await json(`${base3}/messages`)).body.messages as { role: string }[];
		expect(final.map((m) => m.role)).toEqual([
			"user",
			"assistant",
			"user",
			"assistant",
			"user",
			"compaction",
			"assistant",
		]);
	});
});
