/**
 * Queued messages are bounded by bytes, per session and per API key: a follow-up past either
 * limit is 429 `QUEUE_TOO_LARGE` naming the limit, and every follow-up acknowledged before it
 * still reaches the transcript. Against the real server process, with runs kept going by the
 * echo model's delay.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";

const KEY = "key-queue-bytes-test";
/** A follow-up of about 1 MB (one word: the echo model answers it at once). */
const big = (label: string) => `${label}:${"x".repeat(1_000_000)}`;

let dir: string | undefined;
afterEach(() => {
	stopAll();
	if (dir) rmSync(dir, { recursive: true, force: true });
	dir = undefined;
});

async function call(server: MainProcess, method: string, route: string, body?: unknown) {
	const res = await fetch(`${server.url}${route}`, {
		method,
		headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The user messages of the stored transcript, as their first 10 characters. */
async function userTexts(server: MainProcess, id: string): Promise<string[]> {
	const page = await call(server, "GET", `/v1/sessions/${id}/messages?limit=1000`);
	return page.body.messages
		.filter((m: any) => m.role === "user")
		.map((m: any) => (typeof m.content === "string" ? m.content : m.content[0].text).slice(0, 10));
}

describe("queued bytes", () => {
	it("refuses a follow-up past the session's and the key's byte limits with 429; nothing acknowledged is lost", async () => {
		dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-queue-bytes-"));
		const server = await startMain({
			db: path.join(dir, "w.db"),
			env: {
				WHEELHOUSE_API_KEYS: KEY,
				// The prompts' echo takes 40 words × 150 ms: time to queue behind them.
				WHEELHOUSE_FAUX_DELAY_MS: "150",
				// Megabytes of context would be compacted (by the slow echo model) before each call.
				WHEELHOUSE_COMPACTION: "off",
				WHEELHOUSE_MAX_QUEUED_BYTES: "3500000",
				WHEELHOUSE_MAX_QUEUED_BYTES_PER_KEY: "4500000",
			},
		});
		const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
		const s1 = (await call(server, "POST", "/v1/sessions", {})).body.id as string;
		const s2 = (await call(server, "POST", "/v1/sessions", {})).body.id as string;
		for (const id of [s1, s2])
			expect((await call(server, "POST", `/v1/sessions/${id}/prompt`, { message: words })).status).toBe(202);

		// Session 1: three fit in 3.5 MB, the fourth does not.
		for (const label of ["s1-a", "s1-b", "s1-c"]) {
			const queued = await call(server, "POST", `/v1/sessions/${s1}/follow-up`, { message: big(label) });
			expect(queued.status).toBe(202);
		}
		const perSession = await call(server, "POST", `/v1/sessions/${s1}/follow-up`, { message: big("s1-d") });
		expect(perSession.status).toBe(429);
		expect(perSession.body.error).toMatchObject({
			code: "QUEUE_TOO_LARGE",
			details: { limit: "perSession", maxBytes: 3_500_000 },
		});
		expect(perSession.body.error.message).toContain("WHEELHOUSE_MAX_QUEUED_BYTES");

		// Session 2 of the same key: one more fits in the key's 4.5 MB, the next does not.
		expect((await call(server, "POST", `/v1/sessions/${s2}/follow-up`, { message: big("s2-a") })).status).toBe(202);
		const perKey = await call(server, "POST", `/v1/sessions/${s2}/steer`, { message: big("s2-b") });
		expect(perKey.status).toBe(429);
		expect(perKey.body.error).toMatchObject({
			code: "QUEUE_TOO_LARGE",
			details: { limit: "perKey", maxBytes: 4_500_000 },
		});
		expect(perKey.body.error.message).toContain("WHEELHOUSE_MAX_QUEUED_BYTES_PER_KEY");
		// A prompt that would be queued is refused the same way.
		const queuedPrompt = await call(server, "POST", `/v1/sessions/${s2}/prompt`, {
			message: big("s2-c"),
			ifBusy: "followUp",
		});
		expect(queuedPrompt.status).toBe(429);
		expect(queuedPrompt.body.error.code).toBe("QUEUE_TOO_LARGE");

		// The runs drain every acknowledged follow-up into the transcript, and nothing refused.
		for (const id of [s1, s2]) {
			await expect
				.poll(async () => (await call(server, "GET", `/v1/sessions/${id}`)).body.status, { timeout: 30_000 })
				.toBe("idle");
		}
		expect(await userTexts(server, s1)).toEqual(["w0 w1 w2 w", "s1-a:xxxxx", "s1-b:xxxxx", "s1-c:xxxxx"]);
		expect(await userTexts(server, s2)).toEqual(["w0 w1 w2 w", "s2-a:xxxxx"]);

		// Drained, the bytes are free again: the session takes a big follow-up once more.
		expect((await call(server, "POST", `/v1/sessions/${s1}/prompt`, { message: words })).status).toBe(202);
		expect((await call(server, "POST", `/v1/sessions/${s1}/follow-up`, { message: big("s1-e") })).status).toBe(202);
	}, 60_000);
});
