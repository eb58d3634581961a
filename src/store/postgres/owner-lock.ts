/**
 * One server process per database schema when there is no cluster layer: two processes on one
 * schema would each own every session's lease and hand out the same event ids, and the second
 * one's startup recovery would mark the first one's running runs interrupted. So a single-replica
 * store takes the schema's instance-owner lock when it opens and keeps it until it closes.
 *
 * The lock is a PostgreSQL session advisory lock held on a dedicated connection: the database
 * releases it when that connection ends, so a crashed or killed process frees it at once (its
 * connection closes with it) and nothing has to expire. Beside it, a row in `wheelhouse_owner`
 * names the holder (host, pid, start time) so that a refused start can say who owns the schema.
 * If the dedicated connection breaks, the lock is gone: `onLost` is told (another process could
 * now start on the schema).
 */
import { hostname } from "node:os";
import type pg from "pg";
import { createClient } from "./connection.js";
import { OWNER_TABLE } from "./migrations.js";
import type { PostgresSettings } from "./settings.js";

interface OwnerRow {
	pid: number;
	host: string;
	started_at: number;
}

export class PgOwnerLock {
	private released = false;

	private constructor(
		private readonly client: pg.Client,
		private readonly schema: string,
	) {}

	/** Takes the schema's lock, or throws naming the process that holds it. The schema and its owner table exist. */
	static async take(settings: PostgresSettings, onLost: (error: Error) => void): Promise<PgOwnerLock> {
		const client = createClient(settings);
		const schema = settings.schema;
		client.on("error", () => undefined); // reported through `end` below
		await client.connect();
		try {
			const got = (
				await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS ok", [
					`wheelhouse.owner.${schema}`,
				])
			).rows[0]?.ok;
			if (!got) {
				const row = (await client.query<OwnerRow>(`SELECT pid, host, started_at FROM ${schema}.${OWNER_TABLE}`))
					.rows[0];
				const who = row
					? `pid ${row.pid} on host ${row.host}, started ${new Date(row.started_at).toISOString()}`
					: "a process that has not written its name yet";
				throw new Error(
					`session store: schema "${schema}" of ${settings.url.redacted} is in use by another Wheelhouse process ` +
						`(${who}). One server process per schema without a cluster: stop the other one, set ` +
						"WHEELHOUSE_DATABASE_SCHEMA to another schema, or configure WHEELHOUSE_REDIS_URL to run replicas.",
				);
			}
			await client.query(
				`INSERT INTO ${schema}.${OWNER_TABLE} (id, pid, host, started_at) VALUES (1, $1, $2, $3)
				 ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, host = excluded.host, started_at = excluded.started_at`,
				[process.pid, hostname(), Math.round(performance.timeOrigin)],
			);
		} catch (error) {
			await client.end().catch(() => undefined);
			throw error;
		}
		const lock = new PgOwnerLock(client, schema);
		client.on("end", () => {
			if (lock.released) return;
			lock.released = true;
			onLost(
				new Error(
					`the connection holding the instance-owner lock of schema "${schema}" ended: another process could ` +
						"start on this schema now; restart this one",
				),
			);
		});
		return lock;
	}

	/** Gives the schema up (on close). Idempotent. */
	async release(): Promise<void> {
		if (this.released) return;
		this.released = true;
		try {
			await this.client.query(`DELETE FROM ${this.schema}.${OWNER_TABLE} WHERE pid = $1 AND host = $2`, [
				process.pid,
				hostname(),
			]);
			await this.client.query("SELECT pg_advisory_unlock(hashtext($1))", [`wheelhouse.owner.${this.schema}`]);
		} catch {
			// Ending the connection below releases the lock anyway.
		}
		await this.client.end().catch(() => undefined);
	}
}
