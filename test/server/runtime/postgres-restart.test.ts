/**
 * The real server process on the PostgreSQL store: a prompt streams over SSE, the process is
 * restarted, and the session, its transcript and its event log are there for the next one (a
 * `Last-Event-ID` resume gets exactly the events after it). A second process on the same schema
 * stops at startup naming the first (the instance-owner lock). Real child processes.
 */
import { afterEach, describe, expect, it } from "vitest";
import { json, startMain, stopAll } from "../../helpers/main-process.js";
import { havePostgres, NO_POSTGRES, PG_URL, testSchemas } from "../../helpers/postgres.js";
import { openSse, promptSse } from "../../helpers/sse.js";

const schemas = testSchemas("server_restart");
const ok = await havePostgres();
afterEach(() => stopAll());

const pgEnv = (schema: string) => ({
	WHEELHOUSE_STORE: "postgres",
	WHEELHOUSE_DATABASE_URL: PG_URL,
	WHEELHOUSE_DATABASE_SCHEMA: schema,
	WHEELHOUSE_DATABASE_POOL_SIZE: "4",
});

describe.skipIf(!ok)("the server on PostgreSQL", () => {
	it("keeps sessions, transcripts and the event log across a restart; Last-Event-ID resumes", {
		timeout: 120_000,
	}, async () => {
		const schema = schemas.next();
		const first = await startMain({ db: "unused.db", env: pgEnv(schema) });
		// A JSON log line (LOG_FORMAT auto, not a terminal): its message says where the store is.
		const logMessages = first
			.output()
			.split("\n")
			.filter((line) => line.startsWith("{"))
			.map((line) => (JSON.parse(line) as { msg: string }).msg);
		expect(logMessages.join("\n")).toMatch(new RegExp(`PostgreSQL store at .*schema "${schema}": runs as one replica`));
		const id = (await json(`${first.url}/v1/sessions`, "POST", { model: "faux/echo" })).body.id as string;
		const stream = await promptSse(first.url, id, { message: "hello from postgres" });
		const end = await stream.waitForType("agent_end", 20_000);
		expect(end.data.messages.at(-1).content[0].text).toBe("hello from postgres");
		const ids = stream.ids();
		expect(ids.length).toBeGreaterThan(3);
		stream.close();

		first.child.kill("SIGTERM");
		expect(await first.exited, first.output()).toEqual({ code: 0, signal: null });
		const second = await startMain({ db: "unused.db", port: first.port, env: pgEnv(schema) });

		const session = (await json(`${second.url}/v1/sessions/${id}`)).body;
		expect(session).toMatchObject({ id, status: "idle", messageCount: 2 });
		const messages = (await json(`${second.url}/v1/sessions/${id}/messages`)).body;
		expect(messages.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);

		// Resume from the middle of the first run: the rest of it, in order, ending with its agent_end.
		const from = ids[1] as number;
		const resumed = await openSse(`${second.url}/v1/sessions/${id}/events`, {
			headers: { "last-event-id": String(from) },
		});
		const again = await resumed.waitFor((e) => e.event === "agent_end" && e.id === end.id, 20_000);
		expect(again.data.messages.at(-1).content[0].text).toBe("hello from postgres");
		const replayed = resumed.ids();
		expect(replayed[0]).toBeGreaterThan(from);
		expect(replayed).toEqual([...replayed].sort((a, b) => a - b));
		// Every replayed event of the first run is one the live stream had (its deltas are not kept after it ended).
		const replayedOfFirstRun = replayed.filter((i) => i <= (end.id ?? 0));
		expect(replayedOfFirstRun.every((i) => ids.includes(i))).toBe(true);
		expect(replayedOfFirstRun.at(-1)).toBe(end.id);

		// The next run's ids continue after the restart.
		expect((await json(`${second.url}/v1/sessions/${id}/prompt`, "POST", { message: "again" })).status).toBe(202);
		const next = await resumed.waitFor((e) => e.event === "agent_end" && (e.id ?? 0) > (end.id ?? 0), 20_000);
		expect(next.data.messages.at(-1).content[0].text).toBe("again");
		resumed.close();
		second.child.kill("SIGTERM");
		expect(await second.exited).toEqual({ code: 0, signal: null });
	});

	it("a second process on the same schema stops at startup naming the first", { timeout: 120_000 }, async () => {
		const schema = schemas.next();
		const first = await startMain({ db: "unused.db", env: pgEnv(schema) });
		await expect(startMain({ db: "unused.db", env: pgEnv(schema) })).rejects.toThrow(
			new RegExp(
				`server exited with 1 before listening:[\\s\\S]*in use by another Wheelhouse process \\(pid ${first.child.pid} on host`,
			),
		);
		// Another schema on the same database is another store.
		const other = await startMain({ db: "unused.db", env: pgEnv(schemas.next()) });
		expect((await json(`${other.url}/readyz`)).body).toMatchObject({ status: "ready", store: "postgres" });
		// A killed owner frees the schema at once (its connection, and the lock with it, is gone).
		first.child.kill("SIGKILL");
		await first.exited;
		const third = await startMain({ db: "unused.db", env: pgEnv(schema) });
		expect((await json(`${third.url}/readyz`)).status).toBe(200);
	});
});

it.skipIf(ok)(`the server on PostgreSQL: ${NO_POSTGRES}`, () => {});
