/**
 * The PostgreSQL store's group-commit engine: one transaction at a time, each carrying everything
 * called since the last one, in call order.
 *
 * - A *durable* write (`durable`) resolves when the transaction it went into commits.
 * - A *barrier* write (`later`: run starts, messages, run ends) waits for the next `sync()`, any
 *   durable write, a read, or the end of the event-loop turn it was made in (`syncDelayMs` later
 *   when set): a commit starts when the first write arrives, never waiting for others to join it.
 * - Buffered events, reservation extensions and activity times ride along with every commit, or
 *   are written by the flush timer after `flushIntervalMs`. The barrier waits for the commit of
 *   every event buffered before it (a client may be sent any of them next); the deltas of a
 *   streaming message are never buffered, so they leave it nothing to wait for.
 *
 * While one transaction runs, what is called meanwhile waits and goes into the next one together:
 * the commit rate follows the database's round trips, not the callers'. Inside a transaction the
 * writes run in call order; consecutive barrier writes share a savepoint, a durable write has its
 * own, so a write that fails on its own (a bad statement) loses only itself. The events, their
 * trimming, the extensions and the activity times are one statement at the end; a commit that
 * carries nothing else and reads no fence is that statement alone, without BEGIN and COMMIT.
 *
 * Fencing (cluster mode): a transaction first locks the rows of the sessions it writes for and
 * reads their lease tokens; the writes of a session whose token is no longer the one they were
 * made under (another store took the lease over) are skipped, and the session is reported lost.
 * In single-replica mode the instance-owner lock is the fence and this read is left out.
 *
 * A transaction that fails as a whole (the database unreachable) rejects its durable writes with
 * a `StoreUnavailableError`, puts its barrier writes and events back in front for the next try,
 * and reports the failure; tries are then spaced by `retryDelayMs`. Nothing acknowledged is
 * dropped while the process lives: it waits in memory until a commit succeeds.
 */
import type pg from "pg";
import { closedError } from "../shared.js";
import type { RunOp } from "../sql/run-writes.js";
import { runWave } from "./barrier-batch.js";
import { asUnavailable, isConnectionFailure, named, type Queryable } from "./connection.js";
import type { Bump, EventLog } from "./event-log.js";
import type { PostgresSettings } from "./settings.js";
import type { EventBatch, SessionState, WorkingSet } from "./working-set.js";

/** A session's write made under lease token `token` (checked at commit in cluster mode). */
interface Fence {
	sessionId: string;
	token: number;
}

/** A write waiting for the barrier. */
interface LaterWrite {
	kind: "later";
	fence: Fence;
	run: (tx: Queryable) => Promise<void>;
	/** Undoes its effect on the working set when it fails on its own. */
	undo: () => void;
	/** A run it starts (for the duplicate-run check until it commits). */
	runId?: string;
	/** The same write as data: it joins the multi-row statements of the other sessions' (`barrier-batch.ts`). */
	op?: RunOp;
}

/** A durable write. */
interface DurableWrite {
	kind: "durable";
	fence?: Fence;
	/** The value it resolves to when its fence is stale. */
	lostValue?: unknown;
	run: (tx: Queryable) => Promise<unknown>;
	resolve: (value: unknown) => void;
	reject: (error: unknown) => void;
}

type Item = LaterWrite | DurableWrite;

/** What a transaction came to per durable write. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * The buffered events (one row per session batch), their trimming, the reservation extensions and
 * the activity times as one statement (`undefined`: nothing to write), so that a commit carrying
 * only these is a single round trip, and a statement on its own is atomic.
 *
 * Its parts run on one snapshot: the trim cannot see the rows the insert adds, so a batch that a
 * trim in the same commit would delete (a batch kept from a failed commit, older than its
 * session's newest floor) is not inserted, which leaves the same rows as inserting it and trimming
 * after. A statement may change a row only once, so the extensions and the activity times are one
 * `UPDATE` over the union of their sessions (`greatest` skips the NULL of a session with only one).
 */
function eventWrites(batches: EventBatch[], bumps: Bump[], touches: [string, number][]): pg.QueryConfig | undefined {
	const parts: string[] = [];
	const values: unknown[] = [];
	const param = (type: string, value: unknown[]) => {
		values.push(value);
		return `$${values.length}::${type}[]`;
	};
	const floors = new Map<string, number>();
	for (const b of batches) if (b.trimFloor > (floors.get(b.sessionId) ?? 0)) floors.set(b.sessionId, b.trimFloor);
	const kept = batches.filter((b) => b.last > (floors.get(b.sessionId) ?? 0));
	if (kept.length > 0) {
		const ids = param(
			"text",
			kept.map((b) => b.sessionId),
		);
		const last = param(
			"bigint",
			kept.map((b) => b.last),
		);
		const first = param(
			"bigint",
			kept.map((b) => b.first),
		);
		const data = param(
			"text",
			kept.map((b) => b.data),
		);
		parts.push(`INSERT INTO event_batches (session_id, last_id, first_id, data)
			 SELECT * FROM unnest(${ids}, ${last}, ${first}, ${data})`);
	}
	if (floors.size > 0) {
		const ids = param("text", [...floors.keys()]);
		const floor = param("bigint", [...floors.values()]);
		parts.push(`DELETE FROM event_batches e USING unnest(${ids}, ${floor}) AS t(id, floor)
			 WHERE e.session_id = t.id AND e.last_id <= t.floor`);
	}
	const rows = new Map<string, { reserved: number | null; at: number | null }>();
	for (const b of bumps) rows.set(b.state.sessionId, { reserved: b.reserved, at: null });
	for (const [id, at] of touches) rows.set(id, { reserved: rows.get(id)?.reserved ?? null, at });
	if (rows.size > 0) {
		const ids = param("text", [...rows.keys()]);
		const reserved = param(
			"bigint",
			[...rows.values()].map((r) => r.reserved),
		);
		const at = param(
			"bigint",
			[...rows.values()].map((r) => r.at),
		);
		parts.push(`UPDATE sessions s SET event_id_reserved = greatest(s.event_id_reserved, t.reserved),
			 last_active_at = greatest(s.last_active_at, t.at)
			 FROM unnest(${ids}, ${reserved}, ${at}) AS t(id, reserved, at) WHERE s.id = t.id`);
	}
	const main = parts.pop();
	if (main === undefined) return undefined;
	const ctes = parts.map((part, i) => `w${i} AS (${part})`);
	return named(ctes.length > 0 ? `WITH ${ctes.join(", ")} ${main}` : main, values);
}

export class CommitQueue {
	/** `touchSession` times not yet written. */
	readonly touches = new Map<string, number>();
	/** Runs started by a barrier write not yet committed: their session. */
	readonly laterRuns = new Map<string, string>();
	/** Activity times taken by the transaction in flight (still to be shown by reads until it commits). */
	readonly touchesInFlight = new Map<string, number>();
	private items: Item[] = [];
	/** Transactions started and finished (committed or failed); waiters wait for a transaction number. */
	private started = 0;
	private finished = 0;
	private waiters: { tx: number; resolve: () => void }[] = [];
	/** Durable writes not yet settled, barrier writes not yet committed. */
	private unsettled = 0;
	private laterWaiting = 0;
	private running = false;
	private flushWanted = false;
	/** The last transaction failed as a whole: tries are spaced by `retryDelayMs`. */
	private failing = false;
	private syncTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
	private flushTimer: NodeJS.Timeout | undefined;
	private retryTimer: NodeJS.Timeout | undefined;
	commitObserver: ((ms: number) => void) | undefined;
	closed = false;

	constructor(
		private readonly pool: pg.Pool,
		private readonly settings: PostgresSettings,
		private readonly sessions: WorkingSet,
		private readonly log: EventLog,
		/** A session's lease was taken over: it left the working set. */
		private readonly onLost: (state: SessionState) => void,
	) {}

	/** True while `sync()` has anything to wait for (buffered events included, in flight or not). */
	get pending(): boolean {
		return this.laterWaiting > 0 || this.unsettled > 0 || this.log.buffered > 0 || this.log.reservationBehind;
	}

	/** True when anything at all waits to be written. */
	get anythingWaiting(): boolean {
		return this.items.length > 0 || this.log.buffered > 0 || this.log.hasBumps || this.touches.size > 0;
	}

	/** True while the last commit failed as a whole (the database is unreachable). */
	get unavailable(): boolean {
		return this.failing;
	}

	private open(): void {
		if (this.closed) throw closedError();
	}

	/** A durable write: resolves with `run`'s value once committed (`lostValue` if its fence is stale). */
	durable<T>(run: (tx: Queryable) => Promise<T>, fence?: Fence, lostValue?: T): Promise<T> {
		this.open();
		return new Promise<T>((resolve, reject) => {
			this.items.push({
				kind: "durable",
				run,
				resolve: resolve as (value: unknown) => void,
				reject,
				...(fence ? { fence, lostValue } : {}),
			});
			this.unsettled++;
			this.kick();
		});
	}

	/**
	 * A write durable at the next barrier. `op`, the same write as data, lets it share multi-row
	 * statements with other sessions' writes; `run` is what runs when it has none, or alone.
	 */
	later(fence: Fence, run: (tx: Queryable) => Promise<void>, undo: () => void, runId?: string, op?: RunOp): void {
		this.open();
		this.items.push({ kind: "later", fence, run, undo, ...(runId ? { runId } : {}), ...(op ? { op } : {}) });
		if (runId) this.laterRuns.set(runId, fence.sessionId);
		this.laterWaiting++;
		// Not unref'd: a script that stores a message and then exits must still commit it.
		if (this.syncTimer !== undefined || this.running) return; // the loop takes it after the commit in flight
		this.syncTimer =
			this.settings.syncDelayMs === 0
				? setImmediate(this.syncSoon)
				: setTimeout(this.syncSoon, this.settings.syncDelayMs);
	}

	private readonly syncSoon = () => {
		this.syncTimer = undefined;
		this.kick();
	};

	private cancelSyncTimer(): void {
		if (this.syncTimer === undefined) return;
		if (this.settings.syncDelayMs === 0) clearImmediate(this.syncTimer as NodeJS.Immediate);
		else clearTimeout(this.syncTimer as NodeJS.Timeout);
		this.syncTimer = undefined;
	}

	/** Records activity of a session, written with the next commit. */
	touch(sessionId: string, at: number): void {
		this.touches.set(sessionId, Math.max(at, this.touches.get(sessionId) ?? at));
		this.scheduleFlush();
	}

	/** After an append: a full buffer is written now, else the flush timer runs. */
	afterAppend(): void {
		if (this.log.buffered >= this.settings.maxBatchEvents) {
			this.flushWanted = true;
			this.kick();
		} else this.scheduleFlush();
	}

	/**
	 * The barrier: resolves once everything called before it, buffered events included, is
	 * committed (or its commit failed). Never rejects.
	 */
	async sync(): Promise<void> {
		if (!this.pending || this.closed) return;
		if (this.failing && !this.running) return; // reported already; the retry timer tries again
		if (this.log.buffered > 0 || this.log.reservationBehind) this.flushWanted = true;
		await this.waitForAll();
	}

	/** Commits everything waiting (barrier writes, events, activity) and resolves when that is done. Rejects when it failed. */
	async flush(): Promise<void> {
		this.open();
		if (!this.anythingWaiting && !this.running) return;
		await this.durable(async () => undefined);
	}

	/** Before a read: waits for everything called before it. */
	async settle(): Promise<void> {
		await this.waitForAll();
	}

	/**
	 * Waits for the transaction that takes what is waiting now (the next one, started at once if
	 * none runs), or for the one in flight when nothing waits.
	 */
	private waitForAll(): Promise<void> {
		const waiting = this.hasWork();
		const tx = waiting ? this.started + 1 : this.running ? this.started : this.finished;
		if (waiting) this.kick();
		if (this.finished >= tx || this.closed) return Promise.resolve();
		return new Promise((resolve) => this.waiters.push({ tx, resolve }));
	}

	private scheduleFlush(): void {
		if (this.flushTimer !== undefined || this.closed) return;
		this.flushTimer = setTimeout(() => {
			this.flushTimer = undefined;
			this.flushWanted = true;
			this.kick();
		}, this.settings.flushIntervalMs);
		// A pending flush must not keep the process alive; close() writes whatever is left.
		this.flushTimer.unref();
	}

	private kick(): void {
		if (this.running) return;
		this.running = true;
		void this.loop();
	}

	private hasWork(): boolean {
		return (
			this.items.length > 0 || (this.flushWanted && (this.log.waiting || this.log.hasBumps || this.touches.size > 0))
		);
	}

	private async loop(): Promise<void> {
		try {
			while (this.hasWork()) {
				const durableWaiting = this.items.some((i) => i.kind === "durable");
				if (this.failing && !durableWaiting && this.retryTimer !== undefined) break;
				this.cancelSyncTimer();
				await this.commitOnce();
			}
		} finally {
			this.running = false;
		}
		// Something called between the last check and the flag going down.
		if (this.hasWork() && !(this.failing && this.retryTimer !== undefined)) this.kick();
	}

	private async commitOnce(): Promise<void> {
		const tx = ++this.started;
		const items = this.items.splice(0);
		this.flushWanted = false;
		const batches = this.log.take();
		const bumps = this.log.takeBumps();
		const touches = [...this.touches];
		this.touches.clear();
		for (const [id, at] of touches) this.touchesInFlight.set(id, Math.max(at, this.touchesInFlight.get(id) ?? at));
		const startedAt = performance.now();
		let outcomes: Map<DurableWrite, Outcome> | undefined;
		let lost: Set<string> | undefined;
		try {
			const result = await this.transaction(items, batches, bumps, touches);
			outcomes = result.outcomes;
			lost = result.lost;
			this.commitObserver?.(performance.now() - startedAt);
		} catch (error) {
			const sole = items.length === 1 && items[0]?.kind === "durable" && batches.length === 0 && !bumps.length;
			if (sole && touches.length === 0 && !isConnectionFailure(error)) {
				// The one durable write failed on its own (misuse, a bad statement): nothing else to keep.
				outcomes = new Map([[items[0] as DurableWrite, { ok: false, error }]]);
			} else {
				this.failed(error, items, batches, bumps, touches);
			}
		}
		if (outcomes) {
			this.failing = false;
			this.log.committed(batches, bumps);
			for (const item of items) {
				if (item.kind === "later") {
					this.laterWaiting--;
					if (item.runId && this.laterRuns.get(item.runId) === item.fence.sessionId) this.laterRuns.delete(item.runId);
					continue;
				}
				this.unsettled--;
				const outcome = outcomes.get(item);
				if (!outcome) item.resolve(item.lostValue);
				else if (outcome.ok) item.resolve(outcome.value);
				else item.reject(outcome.error);
			}
			for (const sessionId of lost ?? []) {
				const state = this.sessions.get(sessionId);
				if (state) this.onLost(state);
			}
		}
		this.touchesInFlight.clear();
		this.finished = tx;
		this.wake();
	}

	/** Resolves the waiters whose transaction finished (all of them once stopped). */
	private wake(): void {
		const ready = this.waiters.filter((w) => w.tx <= this.finished || this.closed);
		this.waiters = this.waiters.filter((w) => w.tx > this.finished && !this.closed);
		for (const w of ready) w.resolve();
	}

	/** The transaction failed as a whole: durable writes reject, the rest goes back in front. */
	private failed(
		error: unknown,
		items: Item[],
		batches: EventBatch[],
		bumps: Bump[],
		touches: [string, number][],
	): void {
		const reason = asUnavailable(error, "commit", this.settings.url.redacted) as Error;
		const later = items.filter((i): i is LaterWrite => i.kind === "later");
		this.items.unshift(...later);
		this.log.restore(batches, bumps);
		for (const [id, at] of touches) this.touches.set(id, Math.max(at, this.touches.get(id) ?? at));
		for (const item of items) {
			if (item.kind !== "durable") continue;
			this.unsettled--;
			item.reject(reason);
		}
		this.failing = true;
		if (later.length > 0 || batches.length > 0 || bumps.length > 0) {
			this.settings.onFlushError(
				new Error(
					`a commit failed (${reason.message}); ${later.length} run starts, messages and run ends and ` +
						`${batches.reduce((n, b) => n + b.count, 0)} events stay queued for the next try`,
					{ cause: error },
				),
			);
		}
		if (this.retryTimer === undefined && !this.closed) {
			this.retryTimer = setTimeout(() => {
				this.retryTimer = undefined;
				this.flushWanted = true;
				this.kick();
			}, this.settings.retryDelayMs);
			this.retryTimer.unref();
		}
	}

	/** One transaction over `items` in order, then the events, extensions and activity. */
	private async transaction(
		items: Item[],
		batches: EventBatch[],
		bumps: Bump[],
		touches: [string, number][],
	): Promise<{ outcomes: Map<DurableWrite, Outcome>; lost: Set<string> }> {
		const outcomes = new Map<DurableWrite, Outcome>();
		const client = await this.pool.connect();
		let broken: Error | undefined;
		if (items.length === 0 && !this.settings.cluster) {
			// Only events, extensions and activity, and no fence to read: their one statement is a
			// transaction on its own (it takes effect whole or not at all), so BEGIN and COMMIT add nothing.
			try {
				const statement = eventWrites(batches, bumps, touches);
				if (statement) await client.query(statement);
				return { outcomes, lost: new Set() };
			} catch (error) {
				if (isConnectionFailure(error)) broken = error as Error;
				throw error;
			} finally {
				client.release(broken);
			}
		}
		try {
			await client.query("BEGIN");
			const { valid, lost } = await this.fence(client, items, batches, bumps);
			const isValid = (f: Fence | undefined) => f === undefined || valid(f);
			const sole = items.length === 1 && batches.length === 0 && bumps.length === 0 && touches.length === 0;
			let i = 0;
			while (i < items.length) {
				const item = items[i] as Item;
				if (item.kind === "durable") {
					i++;
					if (!isValid(item.fence)) continue; // resolved with its lostValue
					if (sole) {
						outcomes.set(item, { ok: true, value: await item.run(client) });
						continue;
					}
					outcomes.set(item, await this.inSavepoint(client, () => item.run(client)));
					continue;
				}
				const group: LaterWrite[] = [];
				while (i < items.length && items[i]?.kind === "later") {
					const write = items[i++] as LaterWrite;
					if (isValid(write.fence)) group.push(write);
				}
				await this.runLater(client, group);
			}
			const statement = eventWrites(
				batches.filter((b) => isValid(b)),
				bumps.filter((b) => isValid({ sessionId: b.state.sessionId, token: b.token })),
				touches,
			);
			if (statement) await client.query(statement);
			await client.query("COMMIT");
			return { outcomes, lost };
		} catch (error) {
			try {
				await client.query("ROLLBACK");
			} catch (rollbackError) {
				broken = rollbackError as Error;
			}
			if (isConnectionFailure(error)) broken ??= error as Error;
			throw error;
		} finally {
			client.release(broken);
		}
	}

	/**
	 * Cluster mode: locks the rows of the sessions written for and reads their tokens. Returns which
	 * fences hold, and the sessions found taken over (their writes are skipped).
	 */
	private async fence(
		client: Queryable,
		items: Item[],
		batches: EventBatch[],
		bumps: Bump[],
	): Promise<{ valid: (f: Fence) => boolean; lost: Set<string> }> {
		const lost = new Set<string>();
		if (!this.settings.cluster) return { valid: () => true, lost };
		const ids = new Set<string>();
		for (const item of items) if (item.fence) ids.add(item.fence.sessionId);
		for (const b of batches) ids.add(b.sessionId);
		for (const b of bumps) ids.add(b.state.sessionId);
		if (ids.size === 0) return { valid: () => true, lost };
		const rows = (
			await client.query<{ id: string; lease_token: number }>(
				"SELECT id, lease_token FROM sessions WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE",
				[[...ids]],
			)
		).rows;
		const tokens = new Map(rows.map((r) => [r.id, r.lease_token]));
		const valid = (f: Fence) => tokens.get(f.sessionId) === f.token;
		for (const id of ids) {
			const state = this.sessions.get(id);
			const token = tokens.get(id);
			if (state && token !== undefined && token !== state.token) lost.add(id);
		}
		return { valid, lost };
	}

	/** Runs `fn` in a savepoint: its failure (unless the connection broke) undoes it alone. */
	private async inSavepoint(client: Queryable, fn: () => Promise<unknown>): Promise<Outcome> {
		await client.query("SAVEPOINT w");
		try {
			const value = await fn();
			await client.query("RELEASE SAVEPOINT w");
			return { ok: true, value };
		} catch (error) {
			if (isConnectionFailure(error)) throw error;
			await client.query("ROLLBACK TO SAVEPOINT w");
			await client.query("RELEASE SAVEPOINT w");
			return { ok: false, error };
		}
	}

	/**
	 * Barrier writes in one savepoint, as multi-row statements over the sessions (`barrier-batch.ts`);
	 * if that fails, again one savepoint each, so only the failing one is lost.
	 */
	private async runLater(client: Queryable, group: LaterWrite[]): Promise<void> {
		if (group.length === 0) return;
		const all = await this.inSavepoint(client, async () => {
			// Waves with at most one write per session: a session's nth write goes into the nth wave,
			// so each session's writes keep their call order. A write with no `op` runs alone, after
			// every write called before it and before every write called after it.
			let waves: RunOp[][] = [];
			const depth = new Map<string, number>();
			const flush = async () => {
				for (const wave of waves) await runWave(client, wave);
				waves = [];
				depth.clear();
			};
			for (const write of group) {
				if (!write.op) {
					await flush();
					await write.run(client);
					continue;
				}
				const level = depth.get(write.op.sessionId) ?? 0;
				depth.set(write.op.sessionId, level + 1);
				const wave = waves[level] ?? [];
				waves[level] = wave;
				wave.push(write.op);
			}
			await flush();
		});
		if (all.ok) return;
		for (const write of group) {
			const one = await this.inSavepoint(client, () => write.run(client));
			if (one.ok) continue;
			write.undo();
			this.settings.onFlushError(
				new Error(`a queued write failed and is not on disk: ${(one.error as Error).message}`, { cause: one.error }),
			);
		}
	}

	/** Stops the timers (after the last commit). */
	stop(): void {
		this.closed = true;
		this.cancelSyncTimer();
		for (const timer of [this.flushTimer, this.retryTimer]) if (timer) clearTimeout(timer);
		this.flushTimer = this.retryTimer = undefined;
		this.wake();
	}
}
