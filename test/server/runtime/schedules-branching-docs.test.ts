/**
 * The curl examples of docs/schedules.md and docs/branching.md, run as pasted in bash against a real
 * server on a free port: creating the weekday schedule, firing it now and listing its fires; forking
 * a three-turn session after its second turn; and the filtered session lists. `localhost:3000`
 * becomes the server's address, and what a block leaves to the reader (`$ID`, `$SCHEDULE`) is set in
 * its environment. Each line of a block that prints one JSON body per line is run on its own.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../helpers/cluster.js";
import { docBlock } from "../../helpers/doc-blocks.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const exec = promisify(execFile);
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

/** Runs shell text as pasted in bash against `server`, with `env` for what it leaves to the reader. */
async function paste(block: string, env: Record<string, string> = {}): Promise<string> {
	const host = new URL(server!.url).host;
	const { stdout } = await exec("bash", ["-c", `set -e\n${block.replaceAll("localhost:3000", host)}`], {
		env: { PATH: process.env.PATH, ...env },
		timeout: 30_000,
	});
	return stdout;
}

/** The command lines of a block (comment-only and blank lines dropped). */
function commands(block: string): string[] {
	return block.split("\n").filter((line) => line.trim() !== "" && !line.trim().startsWith("#"));
}

async function turn(id: string, message: string): Promise<void> {
	const res = await server!.request("POST", `/v1/sessions/${id}/prompt`, { body: { message } });
	expect(res.status, JSON.stringify(res.body)).toBe(202);
	await waitUntil("the run's end", async () => {
		const s = await server!.request("GET", `/v1/sessions/${id}`);
		return s.body.status === "idle" && !s.body.isStreaming ? true : undefined;
	});
}

describe("docs/schedules.md and docs/branching.md as pasted", { timeout: 60_000 }, () => {
	it("docs/schedules.md: the weekday schedule is created, fires now, and lists its fire", async () => {
		server = await startServer();
		const created = JSON.parse(await paste(docBlock("docs/schedules.md", "sh", '"cron": "0 9 * * 1-5"').code));
		expect(created).toMatchObject({
			cron: "0 9 * * 1-5",
			timezone: "America/New_York",
			profile: "",
			prompt: "Summarise yesterday's tickets",
			metadata: { team: "support" },
			state: "active",
		});
		// The next tick is 09:00 in New York on a weekday.
		const next = new Date(created.nextFireAt as number);
		const local = new Intl.DateTimeFormat("en-US", {
			timeZone: "America/New_York",
			weekday: "short",
			hour: "2-digit",
			minute: "2-digit",
			hourCycle: "h23",
		}).format(next);
		expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri),? 09:00$/);

		const [runNow, fires] = commands(docBlock("docs/schedules.md", "sh", "/run-now").code) as [string, string];
		const env = { SCHEDULE: created.id as string };
		const fire = JSON.parse(await paste(runNow, env));
		expect(fire).toMatchObject({ kind: "manual", outcome: "fired" });
		expect(fire.sessionId).toMatch(/^ses_/);
		const listed = JSON.parse(await paste(fires, env));
		expect(listed.fires).toEqual([expect.objectContaining({ id: fire.id, kind: "manual", outcome: "fired" })]);
		const session = (await server.request("GET", `/v1/sessions/${fire.sessionId}`)).body;
		expect(session.metadata).toMatchObject({ team: "support", "wheelhouse.schedule": created.id });
	});

	it("docs/branching.md: the fork after the second of three turns has 4 messages and says where it came from", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id as string;
		for (const m of ["one", "two", "three"]) await turn(id, m);
		const fork = JSON.parse(await paste(docBlock("docs/branching.md", "sh", "/fork").code, { ID: id }));
		expect(fork).toMatchObject({
			messageCount: 4,
			metadata: { "wheelhouse.forkedFrom": id, "wheelhouse.forkedAt": "wh-3" },
		});
		expect(fork.id).not.toBe(id);
	});

	it("docs/branching.md: the filtered lists find the idle support sessions and the forks of a session", async () => {
		server = await startServer();
		const create = async (metadata: Record<string, string>) =>
			(await server!.request("POST", "/v1/sessions", { body: { metadata } })).body.id as string;
		const support = await create({ team: "support" });
		await create({ team: "sales" });
		const parent = await create({ team: "other" });
		await turn(parent, "one");
		const fork = (await server.request("POST", `/v1/sessions/${parent}/fork`, { body: {} })).body.id as string;
		const [bySupport, byParent] = commands(docBlock("docs/branching.md", "sh", "metadata.team=support").code) as [
			string,
			string,
		];
		const ids = (stdout: string) => (JSON.parse(stdout).sessions as { id: string }[]).map((s) => s.id);
		expect(ids(await paste(bySupport))).toEqual([support]);
		expect(ids(await paste(byParent, { ID: parent }))).toEqual([fork]);
	});
});
