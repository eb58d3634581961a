// Builds dist/ with `npm run build` and starts real server processes: a minute or more on a busy machine.
/**
 * The examples that start Wheelhouse on PostgreSQL run as pasted, as real processes:
 * - docs/cluster.md's three-replica quick start (`npm run build`, then three `node dist/main.js` in the
 *   background): a session created on the first replica is prompted on the second and watched on
 *   the third, and the run ends there;
 * - docs/durability.md's `npm start` on PostgreSQL: the session it serves is a row of the database;
 * - docs/upgrading.md's two schema-version queries (`sqlite3`, `psql`) print the latest migrations.
 * Only addresses change: the ports become free ones, the database URL the test database's, the
 * SQLite path a fresh file's, `public` the test's schema; the schema and Redis key prefix of the test
 * (WHEELHOUSE_DATABASE_SCHEMA, WHEELHOUSE_REDIS_PREFIX) come from the environment, which the blocks do
 * not set. Where PostgreSQL or Redis is missing the tests skip with one line.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS as PG_MIGRATIONS } from "../../../src/store/postgres/migrations.js";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../../src/store/sqlite/migrations.js";
import { haveClusterServices, NO_CLUSTER_SERVICES, REDIS_URL } from "../../helpers/cluster.js";
import { holdDist } from "../../helpers/dist-lock.js";
import { docBlock } from "../../helpers/doc-blocks.js";
import { freePort, json, startMain, stopAll } from "../../helpers/main-process.js";
import { killPastedShells, pastedServerReady, startPastedShell } from "../../helpers/pasted-shell.js";
import { PG_URL, pgQuery, testSchemas } from "../../helpers/postgres.js";
import { openSse } from "../../helpers/sse.js";

const exec = promisify(execFile);
const services = await haveClusterServices();
if (!services) console.log(NO_CLUSTER_SERVICES);
const schemas = testSchemas("docs-examples");

let dir: string;

/** The schema and Redis prefix of one example, from the environment. */
function isolation(): Record<string, string> {
	const schema = schemas.next();
	return {
		WHEELHOUSE_DATABASE_SCHEMA: schema,
		WHEELHOUSE_REDIS_PREFIX: `wh-test:${schema}:${randomBytes(3).toString("hex")}:`,
		WHEELHOUSE_FAUX_DELAY_MS: "20",
		LOG_LEVEL: "warn",
	};
}

beforeAll(() => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-docs-examples-"));
});

afterEach(async () => {
	killPastedShells();
	stopAll();
});

afterAll(() => {
	rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!services)("PostgreSQL examples as pasted", { timeout: 300_000 }, () => {
	it("docs/cluster.md: three replicas; a session made on one, prompted on another, watched on the third", async () => {
		const block = docBlock("docs/cluster.md", "sh", "node dist/main.js").code;
		const ports = [await freePort(), await freePort(), await freePort()];
		expect(block).toContain("3001 3002 3003");
		expect(block).toContain("postgres://postgres@127.0.0.1:5432/test");
		expect(block).toContain("redis://127.0.0.1:6379");
		const script = block
			.replace("3001 3002 3003", ports.join(" "))
			.replace("postgres://postgres@127.0.0.1:5432/test", PG_URL)
			.replace("redis://127.0.0.1:6379", REDIS_URL);
		const env = isolation();
		// The block builds dist/ and starts from it: no other test may rewrite it meanwhile.
		const release = await holdDist();
		const [a, b, c] = ports.map((port) => `http://127.0.0.1:${port}`) as [string, string, string];
		try {
			const shell = startPastedShell(`set -e\n${script}\nwait\n`, env);
			for (const url of [a, b, c]) await pastedServerReady(url, shell);
		} finally {
			release();
		}

		const created = await json(`${a}/v1/sessions`, "POST", {});
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		const watching = await openSse(`${c}/v1/sessions/${id}/events`);
		const prompted = await json(`${b}/v1/sessions/${id}/prompt`, "POST", { message: "hello from the cluster" });
		expect(prompted.status).toBe(202);
		await watching.waitForType("agent_end", 30_000);
		watching.close();
		const messages = (await json(`${c}/v1/sessions/${id}/messages`)).body.messages;
		expect(JSON.stringify(messages.at(-1))).toContain("hello from the cluster");
		// The three share the test's schema (the block's database, in the schema from the environment).
		const rows = await pgQuery(`SELECT id FROM ${env.WHEELHOUSE_DATABASE_SCHEMA}.sessions WHERE id = $1`, [id]);
		expect(rows).toHaveLength(1);
	});

	it("docs/durability.md: npm start on PostgreSQL keeps its sessions in the database", async () => {
		const block = docBlock("docs/durability.md", "sh", "npm start").code;
		const url = /WHEELHOUSE_DATABASE_URL=(\S+)/.exec(block)?.[1];
		expect(url, "the block sets WHEELHOUSE_DATABASE_URL").toBeDefined();
		const port = await freePort();
		const env: Record<string, string> = { ...isolation(), PORT: String(port) };
		const base = `http://127.0.0.1:${port}`;
		// `npm start` builds dist/ when it is stale, then starts from it.
		const release = await holdDist();
		try {
			const shell = startPastedShell(block.replace(url!, PG_URL), env);
			await pastedServerReady(base, shell);
		} finally {
			release();
		}
		const created = await json(`${base}/v1/sessions`, "POST", {});
		expect(created.status).toBe(201);
		const rows = await pgQuery(`SELECT id FROM ${env.WHEELHOUSE_DATABASE_SCHEMA}.sessions WHERE id = $1`, [
			created.body.id,
		]);
		expect(rows).toHaveLength(1);
	});

	it("docs/upgrading.md: the sqlite3 and psql lines print the latest schema versions", {
		timeout: 60_000,
	}, async () => {
		const block = docBlock("docs/upgrading.md", "sh", "schema_version").code;
		// A SQLite file and a PostgreSQL schema, each migrated by a server that started on it.
		const db = path.join(dir, "wheelhouse.db");
		const env = isolation();
		const sqliteServer = await startMain({ db });
		const pgServer = await startMain({
			db: "/nonexistent/unused.db",
			// startMain waits for the listening line, logged at info.
			env: { ...env, WHEELHOUSE_STORE: "postgres", WHEELHOUSE_DATABASE_URL: PG_URL, LOG_LEVEL: "info" },
		});
		// Migrated before they listen; a stop would wait out the shutdown delay for nothing.
		sqliteServer.child.kill("SIGKILL");
		pgServer.child.kill("SIGKILL");
		await Promise.all([sqliteServer.exited, pgServer.exited]);
		expect(block).toContain("/data/wheelhouse.db");
		expect(block).toContain("public.wheelhouse_schema_version");
		const script = block
			.replace("/data/wheelhouse.db", db)
			.replace("public.wheelhouse_schema_version", `${env.WHEELHOUSE_DATABASE_SCHEMA}.wheelhouse_schema_version`);
		const { stdout } = await exec("bash", ["-c", `set -e\n${script}`], {
			env: { PATH: process.env.PATH, WHEELHOUSE_DATABASE_URL: PG_URL },
			timeout: 30_000,
		});
		const numbers = [...stdout.matchAll(/^\s*(\d+)\s*$/gm)].map((m) => Number(m[1]));
		expect(numbers, stdout).toEqual([SQLITE_MIGRATIONS.at(-1)!.version, PG_MIGRATIONS.at(-1)!.version]);
	});
});
