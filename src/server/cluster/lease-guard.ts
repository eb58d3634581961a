/**
 * What a replica does only while it knows it holds a session's lease: send a frame of a session it
 * runs to a client, publish an event, start a model call or a tool call.
 *
 * The store fences every write with the lease's token, but nothing fences a socket write, a
 * provider request or a tool's side effect: a replica that stalled past the TTL (a long pause,
 * `SIGSTOP`) and wakes up would stream, publish and act on a run another replica has taken over
 * until its next commit or renewal tells it. So the guard keeps, on the monotonic clock, when
 * this replica last *started* a lease renewal that succeeded: every lease it still holds after
 * that renewal lasts until at least that instant plus the TTL (the database sets each expiry
 * from the moment its statement runs, later than that instant; a lease taken since is newer).
 * While the last such start is less than {@link FRESH_FRACTION} of the TTL old the guard is
 * *fresh* and every check passes without I/O. Otherwise (the replica stalled, or the database
 * was away longer than that) a check waits for a renewal first; the renewal tells the store's
 * listeners which sessions were lost, and they drop those sessions' streams and runs before
 * the check goes on. The guard renews on its own timer, every third of the TTL, so it is fresh
 * in normal operation and the checks cost nothing.
 *
 * - As a write barrier of the app's SSE write passes (`run`, `pending`): while the guard is not
 *   fresh no frame leaves the process.
 * - `whenFresh()`: the publisher awaits it before publishing a batch.
 * - `extension`: checks before each model call and each tool execution of a session's run that
 *   its lease is held (confirmed now, after any pause); a call of a session whose lease is gone
 *   does not start (the model call ends as an error, the tool call is blocked; the run was
 *   aborted by the loss anyway, and the store refuses what it writes).
 *
 * The window left is the one between a check and the write it allows: a stall exactly there
 * still lets that one write out. The fresh fraction leaves a third of the TTL for it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { StreamFn } from "../../agent/types.js";
import { errorStream } from "../../ai/stream.js";
import type { LeaseStore } from "../../store/types.js";
import type { WriteBarrier } from "../http/sse/write-passes.js";
import type { LiveSession, SessionExtension } from "../runtime/session/live-session.js";
import type { SessionManager } from "../runtime/session/manager.js";

/** How much of the TTL after a renewal's start the guard trusts the lease without asking again. */
const FRESH_FRACTION = 2 / 3;

/** Waits between renewals that failed (the database unreachable): doubled per failure up to a third of the TTL. */
const RETRY_FIRST_MS = 50;

/** Why a model or tool call of a session whose lease is gone does not start. */
export const LEASE_LOST_REASON =
	"This replica no longer holds the session (another replica took its run over); the call was not made.";

export class LeaseGuard implements WriteBarrier {
	/** `performance.now()` when the last successful renewal started (-Infinity: none yet). */
	private confirmedAt = Number.NEGATIVE_INFINITY;
	private confirming: Promise<void> | undefined;
	private timer: NodeJS.Timeout | undefined;
	private closed = false;
	private readonly freshMs: number;
	private sessions: SessionManager | undefined;
	/** Renewals that failed in a row (the backoff). */
	private failures = 0;

	constructor(
		private readonly leases: LeaseStore,
		private readonly logger: FastifyBaseLogger,
	) {
		this.freshMs = leases.leaseTtlMs * FRESH_FRACTION;
	}

	/** Whether a renewal started less than the fresh fraction of the TTL ago succeeded. */
	get fresh(): boolean {
		return performance.now() - this.confirmedAt < this.freshMs;
	}

	/** Renews now and every third of the TTL; `sessions` tells which session object runs a session here. */
	async start(sessions: SessionManager): Promise<void> {
		this.sessions = sessions;
		this.timer = setInterval(() => void this.renew(), Math.max(10, Math.floor(this.leases.leaseTtlMs / 3)));
		this.timer.unref();
		await this.whenFresh();
	}

	stop(): void {
		this.closed = true;
		clearInterval(this.timer);
	}

	/**
	 * Resolves once the guard is fresh: at once when it is, else after a renewal that started
	 * now succeeded (retried while the database is unreachable; the sessions it found lost have
	 * been dropped by then). Never rejects.
	 */
	async whenFresh(): Promise<void> {
		while (!this.fresh && !this.closed) await this.renew();
	}

	/** One renewal (shared by concurrent callers); a failure is logged once and retried after a pause. */
	private renew(): Promise<void> {
		this.confirming ??= (async () => {
			const startedAt = performance.now();
			try {
				await this.leases.renewLeases();
				this.confirmedAt = Math.max(this.confirmedAt, startedAt);
				this.failures = 0;
			} catch (err) {
				if (this.failures === 0) {
					this.logger.warn({ err }, "renewing the session leases failed; streams and calls of its runs wait");
				}
				this.failures++;
				const wait = Math.min(RETRY_FIRST_MS * 2 ** (this.failures - 1), this.leases.leaseTtlMs / 3);
				await sleep(wait, undefined, { ref: false });
			}
		})().finally(() => {
			this.confirming = undefined;
		});
		return this.confirming;
	}

	/**
	 * Whether `session` still runs here under a lease this replica holds, confirmed now: the store
	 * holds its lease and it is the session object in memory (a lost session is dropped from it).
	 */
	async holds(session: LiveSession): Promise<boolean> {
		await this.whenFresh();
		return (
			!this.closed &&
			this.leases.leaseToken(session.id) !== undefined &&
			this.sessions?.inMemory(session.id) === session
		);
	}

	/** As a write barrier of the SSE write passes: no frame leaves while the guard is not fresh. */
	run(): Promise<void> {
		return this.whenFresh();
	}

	/** As a write barrier: true while the guard is not fresh (a pass then waits for a renewal). */
	get pending(): boolean {
		return !this.fresh;
	}

	/** The session extension that checks the lease before each model call and tool execution. */
	readonly extension: SessionExtension = {
		name: "cluster-lease-guard",
		attach: (session) => this.guardCalls(session),
	};

	/**
	 * Wraps the session's model calls and tool calls, as the outermost layer of the chain (`model-calls.ts`): the context transform (a compaction may call the model), the model call, and
	 * the tool hooks (checked before them, and again after, since an approval may wait long).
	 */
	private guardCalls(session: LiveSession): void {
		session.useModelCallLayer("lease", {
			stream:
				(stream: StreamFn): StreamFn =>
				async (model, context, options) =>
					(await this.holds(session)) ? stream(model, context, options) : errorStream(model, LEASE_LOST_REASON),
			transformContext: (transform) =>
				transform &&
				(async (messages, signal) => ((await this.holds(session)) ? transform(messages, signal) : messages)),
			beforeToolCall: (before) => async (context, signal) => {
				if (!(await this.holds(session))) return { block: true, reason: LEASE_LOST_REASON };
				const result = await before(context, signal);
				if (result?.block) return result;
				if (!(await this.holds(session))) return { block: true, reason: LEASE_LOST_REASON };
				return result;
			},
		});
	}
}
