/**
 * A session with an open stream and runs one after another holds only the window of its
 * transcript the next model call reads (from the latest compaction's first kept message on), not
 * the whole transcript: against the real server process with its JavaScript heap capped below what
 * the transcript takes, a process that kept it runs out of memory (and dies), one that releases it
 * serves on. And nothing is lost by it: the model is sent exactly the compacted context, message
 * pages return every message in order, and after a restart the session loads its window and goes
 * on with the same context.
 *
 * On PostgreSQL: the window is the session manager's, the same on every store, and megabytes per
 * message on SQLite are `sqlite-checkpoint-writers.test.ts`'s matter.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { estimateUsage } from "../../../src/ai/providers/faux.js";
import { convertWithSummaries } from "../../../src/server/runtime/compaction/view.js";
import { json, type MainProcess, startMain, stopAll } from "../../helpers/main-process.js";
import { havePostgres, PG_URL, testSchemas } from "../../helpers/postgres.js";
import { openSse, type SseReader } from "../../helpers/sse.js";

const schemas = testSchemas("live_session_window");
const ok = await havePostgres();

const PROMPTS = 48;
/** Each prompt is one word of this many characters; the echo model answers it with the same. */
const PROMPT_CHARS = 2_000_000;
const MB = 1024 * 1024;
/**
 * The server's heap cap: under the transcript below (~190 MB), over what one turn of it needs. At
 * 128 MB against a 144 MB transcript the server on Node 26 died twice in full-suite runs on a loaded
 * machine and never alone; the margin over one turn is what a loaded machine needs, not a weaker claim.
 */
const HEAP_MB = 160;

const streams: SseReader[] = [];
afterEach(() => {
	for (const stream of streams.splice(0)) stream.close();
	stopAll();
});

function rssMb(server: MainProcess): number {
	const status = readFileSync(`/proc/${server.child.pid}/status`, "utf8");
	return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function promptAndWait(server: MainProcess, id: string, message: string): Promise<void> {
	expect((await json(`${server.url}/v1/sessions/${id}/prompt`, "POST", { message })).status).toBe(202);
	await expect
		.poll(async () => (await json(`${server.url}/v1/sessions/${id}`)).body.status, { timeout: 60_000 })
		.toBe("idle");
}

/** Every message of the session, through `GET /v1/sessions/:id/messages` pages of two. */
async function allMessages(server: MainProcess, id: string): Promise<any[]> {
	const messages: any[] = [];
	for (let offset: number | undefined = 0; offset !== undefined; ) {
		const page = await json(`${server.url}/v1/sessions/${id}/messages?offset=${offset}&limit=2`);
		expect(page.status).toBe(200);
		expect(page.body.offset).toBe(offset);
		messages.push(...page.body.messages);
		offset = page.body.nextOffset;
	}
	return messages;
}

/**
 * The input tokens the echo model reports for the call that produced the assistant message at
 * `index`: its estimate of the context it was sent, which must be the latest compaction's summary
 * and the messages from its first kept one on.
 */
function expectedInput(transcript: any[], index: number): number {
	let c = index - 1;
	while (c >= 0 && transcript[c].role !== "compaction") c--;
	const compaction = transcript[c];
	const view = [compaction, ...transcript.slice(compaction.firstKeptIndex, index).filter((m) => m !== compaction)];
	return estimateUsage([], { messages: convertWithSummaries(view) }).input;
}

describe("live session transcript window", () => {
	it.skipIf(!ok && process.env.TEST_REQUIRE_ALL !== "1")(
		"a streamed session's runs keep a process bounded; the model, the pages and a restart see everything",
		async () => {
			const schema = schemas.next();
			const env = {
				WHEELHOUSE_STORE: "postgres",
				WHEELHOUSE_DATABASE_URL: PG_URL,
				WHEELHOUSE_DATABASE_SCHEMA: schema,
				NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`,
			};
			let server = await startMain({ db: "unused.db", env });
			let exited = false;
			void server.exited.then(() => {
				exited = true;
			});
			const id = (await json(`${server.url}/v1/sessions`, "POST", {})).body.id as string;
			streams.push(await openSse(`${server.url}/v1/sessions/${id}/events`));
			const rssBefore = rssMb(server);
			const prompts: string[] = [];
			for (let p = 0; p < PROMPTS; p++) {
				prompts.push(`${p}${"x".repeat(PROMPT_CHARS)}`);
				await promptAndWait(server, id, prompts[p] as string);
			}
			expect(exited).toBe(false);
			console.log(`RSS ${rssBefore.toFixed(0)} MB -> ${rssMb(server).toFixed(0)} MB after ${PROMPTS} prompts`);

			// Every message, in order: each prompt, a compaction before each model call from the second
			// on (the context passes the window), and the echo of the prompt.
			const state = (await json(`${server.url}/v1/sessions/${id}`)).body;
			const transcript = await allMessages(server, id);
			expect(state.messageCount).toBe(transcript.length);
			// More than the heap may take: held in memory, the transcript would not fit.
			const transcriptMb = transcript.reduce((sum, m) => sum + JSON.stringify(m).length, 0) / MB;
			expect(transcriptMb).toBeGreaterThan(HEAP_MB);
			expect(transcript.map((m) => m.role)).toEqual([
				"user",
				"assistant",
				...Array.from({ length: PROMPTS - 1 }, () => ["user", "compaction", "assistant"]).flat(),
			]);
			const users = transcript.filter((m) => m.role === "user");
			const answers = transcript.filter((m) => m.role === "assistant");
			for (let p = 0; p < PROMPTS; p++) {
				const content = users[p].content;
				expect(typeof content === "string" ? content : content[0].text).toBe(prompts[p]);
				expect(answers[p].content[0].text).toBe(prompts[p]);
			}
			// The model was sent the summary and the kept messages, in every run.
			for (let i = 4; i < transcript.length; i += 3) {
				expect(transcript[i].usage.input).toBe(expectedInput(transcript, i));
			}

			// A restart: the session loads its window and goes on with the same context.
			const contextTokens = state.compaction.contextTokens as number;
			server.child.kill("SIGTERM");
			await server.exited;
			server = await startMain({ db: "unused.db", env });
			const reloaded = (await json(`${server.url}/v1/sessions/${id}`)).body;
			expect(reloaded.messageCount).toBe(transcript.length);
			expect(reloaded.compaction.contextTokens).toBe(contextTokens);
			streams.push(await openSse(`${server.url}/v1/sessions/${id}/events`));
			await promptAndWait(server, id, "and after the restart?");
			const after = await allMessages(server, id);
			expect(after.slice(0, transcript.length)).toEqual(transcript);
			const last = after.length - 1;
			expect(after[last].content[0].text).toBe("and after the restart?");
			expect(after[last].usage.input).toBe(expectedInput(after, last));
		},
		300_000,
	);
});
