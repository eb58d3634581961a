/**
 * Fair admission (`auth.admission: "queue"`): a prompt past its tenant's or its API key's limit
 * of concurrent runs (`auth.maxRunsPerTenant`, `WHEELHOUSE_MAX_RUNS_PER_KEY`) waits in the store's
 * admission queue instead of being refused, and starts when a slot frees.
 *
 * Every prompt that would start a run on an idle session takes a slot in the store first
 * (`AdmissionStore.admit`): the slots are counted there, so in a cluster every replica counts the
 * same runs. A run that may not start yet is stored as waiting before the 202 answers (a crash
 * loses none), and `run_queued` goes on its session's stream with its position. Whenever a slot
 * frees (a run holding one ends, here; or on the tick, for slots freed elsewhere and for holders
 * that died), this process asks the store for the next waiting run, round-robin between tenants
 * and FIFO within one, and starts it through the session port like any prompt; its normal events
 * follow on the session's stream.
 *
 * A request that starts its run itself (a facade's, `continue`, `regenerate`, `edit`: they answer
 * with the run, or stream it in their own protocol) goes through {@link Admission.startWhenAdmitted}:
 * it takes a slot, or stores a place with no messages held by this process and waits in the
 * request while queued (bounded by `waitMs`: `ADMISSION_TIMEOUT`, the place given up). The place
 * takes its turn in the same round-robin; whichever replica claims it leaves it to its waiter, who
 * sees it `running` (at once here, on its next look from elsewhere) and starts the run. A request
 * that went away gives its place up; a dead waiter's places are dropped by recovery.
 *
 * Positions: `run_queued` is published again whenever a waiting run's position changes (a run of
 * its group took a slot, or left the queue ahead of it), so a client sees its place move.
 *
 * Liveness: the process that holds a slot refreshes its heartbeat on every tick. Slots of a holder
 * that stopped (a SIGKILL, a lost replica) are recovered once the heartbeat is `staleMs` old, at
 * once at startup on a single node (nobody else holds any): a run that had started gives its slot
 * back (startup recovery deals with the run itself), one that had not waits again at its place.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { AgentMessage } from "../../../agent/types.js";
import { admissionGroup, isRequestPlace } from "../../../store/admission-types.js";
import type { AdmissionEntry, AdmissionLimits, AdmissionStore } from "../../../store/types.js";
import { sessionError } from "./errors.js";
import type { IfBusy, PortRunOptions, PromptOutcome, SessionPort } from "./port.js";
import type { RunHandle } from "./runs.js";

/** What a prompt through admission came to: as a prompt's, or waiting for a slot. */
export type AdmittedPrompt =
	| PromptOutcome
	| {
			kind: "waiting";
			/** 1 + the runs of the same tenant (the same owner without one) waiting ahead of it. */
			position: number;
			admissionId: number;
	  };

/** What admission needs of the sessions (the manager's). */
export interface AdmissionSessions {
	/** The port of a session, as the server's own caller (`ownerId` null sees every session). */
	open(id: string, ownerId: string | null): Promise<SessionPort>;
	/** Publishes `run_queued` on a session's stream (loads it here). */
	publishQueued(id: string, payload: Record<string, unknown>): Promise<void>;
	readonly isShuttingDown: boolean;
}

export interface AdmissionOptions {
	store: AdmissionStore;
	sessions: AdmissionSessions;
	limits: AdmissionLimits;
	/**
	 * Rejects (with the refusal to answer) when a budget of the run's owner or of the session's
	 * tenant is spent: such a run is refused before it would wait for a slot. Absent: no budgets.
	 */
	checkBudgets?: (ownerId: string | null, tenant: string | null) => Promise<void>;
	/** The tenant of an owner id; the slot counts follow the session owner's. */
	tenantOf: (ownerId: string) => string | null;
	logger: FastifyBaseLogger;
	/** Cluster mode: other replicas hold slots too, so a holder is dead only once its heartbeat is stale. */
	shared: boolean;
	/** How often waiting runs are looked at and the heartbeat refreshed; default 1 s. */
	tickMs?: number;
	/** How old a holder's heartbeat may get before its slots are recovered (cluster mode); default 10 s. */
	staleMs?: number;
	/** How long a request waits queued in {@link Admission.startWhenAdmitted}; default 60 s. */
	waitMs?: number;
	/** How often a waiting request looks at its place (its turn may come from another replica); default 200 ms. */
	placePollMs?: number;
}

/** The session a request starts a run on, as admission needs it. */
export interface AdmissionTarget {
	sessionId: string;
	ownerId: string | null;
	/** A run is going on it: the start is the session's business (busy, or a queued message), no slot. */
	running: boolean;
}

/** How a request waits for its slot. */
export interface AdmissionWait {
	/** Aborted when the request went away: its place is given up. */
	signal?: AbortSignal;
	/**
	 * Told the position while the request waits: when it was queued, and again each time it
	 * changes. Contract: must not throw (a failure is logged, the wait goes on).
	 */
	onQueued?: (position: number) => void | Promise<void>;
}

type Prompt = PortRunOptions & Parameters<SessionPort["prompt"]>[2];

export class Admission {
	/** This process, as the holder of the slots it takes. */
	readonly holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
	private timer: NodeJS.Timeout | undefined;
	private pumping: Promise<void> | undefined;
	private pumpAgain = false;
	private stopped = false;
	/** Slots whose release failed (the store unreachable): given back on a later tick. */
	private readonly unreleased = new Set<number>();
	/** Slots this process holds (their heartbeat is refreshed on each tick). */
	private readonly held = new Set<number>();
	/** Requests waiting here for their place's turn: wakes each when this process claims it. */
	private readonly waiters = new Map<number, () => void>();
	private readonly tickMs: number;
	private readonly staleMs: number;
	private readonly waitMs: number;
	private readonly placePollMs: number;

	constructor(private readonly options: AdmissionOptions) {
		this.tickMs = options.tickMs ?? 1000;
		this.staleMs = options.staleMs ?? 10_000;
		this.waitMs = options.waitMs ?? 60_000;
		this.placePollMs = options.placePollMs ?? 200;
	}

	/** Recovers the slots of dead holders, starts what may start, and ticks from now on. */
	async start(): Promise<void> {
		await this.recover(true);
		this.timer = setInterval(() => void this.tick(), this.tickMs);
		this.timer.unref();
		this.pump();
	}

	/** Stops starting runs (shutdown); the slots held are given back as their runs end. */
	stop(): void {
		this.stopped = true;
		if (this.timer) clearInterval(this.timer);
	}

	/**
	 * `port.prompt` under admission. A session with a run going is left to `ifBusy` (a queued
	 * message needs no slot); otherwise the run takes a slot first, or waits for one (durable
	 * before this resolves). Rejects with `AGENT_BUSY` when the session has a run waiting already.
	 */
	async prompt(port: SessionPort, messages: AgentMessage[], ifBusy: IfBusy, options: Prompt): Promise<AdmittedPrompt> {
		if (port.record.status === "running") return port.prompt(messages, ifBusy, options);
		const ownerId = port.record.ownerId;
		await this.options.checkBudgets?.(ownerId, port.record.tenant);
		const outcome = await this.admit(port.id, ownerId, messages);
		if (outcome.kind === "session_waiting") {
			throw sessionError(
				"AGENT_BUSY",
				`Session ${port.id} has a run waiting for a slot already (position ${outcome.position}); wait for its agent_start, or queue the message with POST /follow-up.`,
			);
		}
		if (outcome.kind === "queued") {
			const { entry, position } = outcome;
			await this.announce(entry, position);
			this.pump(); // a slot may have freed meanwhile
			return { kind: "waiting", position, admissionId: entry.id };
		}
		const prompt = () => port.prompt(messages, ifBusy, options);
		return this.startOnSlot(outcome.entry.id, prompt, (result) => (result.kind === "started" ? result.run : undefined));
	}

	/**
	 * Runs `start` (which starts a run, or refuses to) once the session's owner has a run slot,
	 * waiting in this call while its place is queued. `runOf` finds the run `start` started (the
	 * slot is held until it ends); none: the slot is given back. Rejects with `AGENT_BUSY` when the
	 * session has a run waiting already, `ADMISSION_TIMEOUT` after `waitMs` queued, the signal's
	 * reason when the request went away; in each case nothing is left queued.
	 */
	async startWhenAdmitted<T>(
		target: AdmissionTarget,
		start: () => Promise<T>,
		runOf: (started: T) => RunHandle | undefined,
		wait: AdmissionWait = {},
	): Promise<T> {
		if (target.running) return start();
		const { ownerId, sessionId } = target;
		const outcome = await this.admit(sessionId, ownerId, [], this.holder);
		if (outcome.kind === "session_waiting") {
			throw sessionError(
				"AGENT_BUSY",
				`Session ${sessionId} has a run waiting for a slot already (position ${outcome.position}); wait for its agent_start.`,
			);
		}
		const { entry } = outcome;
		if (outcome.kind === "queued") await this.waitForTurn(entry, outcome.position, wait);
		return this.startOnSlot(entry.id, start, runOf);
	}

	/** Asks the store for a slot, or a place in its queue, for a run of `sessionId` (`waiter`: a request waits here). */
	private admit(sessionId: string, ownerId: string | null, messages: AgentMessage[], waiter?: string) {
		const tenant = ownerId === null ? null : this.options.tenantOf(ownerId);
		const now = Date.now();
		const entry = { sessionId, ownerId, tenant, messages, enqueuedAt: now, ...(waiter !== undefined && { waiter }) };
		return this.options.store.admit(entry, this.options.limits, this.holder, now);
	}

	/** Runs `start` on slot `id`: the run it started (`runOf`) holds the slot; none, or a failure, gives it back. */
	private async startOnSlot<T>(
		id: number,
		start: () => Promise<T>,
		runOf: (started: T) => RunHandle | undefined,
	): Promise<T> {
		let started: T;
		try {
			started = await start();
		} catch (err) {
			await this.release(id);
			throw err;
		}
		const run = runOf(started);
		if (run) this.hold(id, run);
		else await this.release(id);
		return started;
	}

	/** Waits until the place `entry` holds a slot; gives it up (and rejects) on timeout or abort. */
	private async waitForTurn(entry: AdmissionEntry, first: number, wait: AdmissionWait): Promise<void> {
		const { store, logger } = this.options;
		const deadline = Date.now() + this.waitMs;
		let position = first;
		const told = async (at: number) => {
			await this.announce(entry, at);
			try {
				await wait.onQueued?.(at);
			} catch (err) {
				logger.warn({ err, sessionId: entry.sessionId }, "admission: a waiting request was not told its position");
			}
		};
		let wake: () => void = () => {};
		this.waiters.set(entry.id, () => wake());
		try {
			await told(position);
			this.pump(); // a slot may have freed meanwhile
			for (;;) {
				if (wait.signal?.aborted) throw wait.signal.reason ?? new Error("the request went away");
				// Shutting down: no waiting run starts here (the request gets its answer now, not at the kill).
				if (this.stopped) throw sessionError("SHUTTING_DOWN", "The server is shutting down; no new runs start.");
				const left = deadline - Date.now();
				if (left <= 0) {
					throw sessionError(
						"ADMISSION_TIMEOUT",
						`Every run slot of your tenant or API key stayed taken for ${this.waitMs} ms (position ${position} when given up); nothing was queued. Retry later.`,
						{ position, waitedMs: this.waitMs },
					);
				}
				const woken = new Promise<void>((resolve) => {
					wake = resolve;
				});
				const aborted = new AbortController();
				const onAbort = () => aborted.abort();
				wait.signal?.addEventListener("abort", onAbort, { once: true });
				await Promise.race([
					woken,
					// Far back in the queue, looked at less often (one query a look); at its head, every poll.
					sleep(Math.min(this.placePollMs * Math.min(position, 5), left), undefined, {
						signal: aborted.signal,
					}).catch(() => {}),
				]);
				aborted.abort();
				wait.signal?.removeEventListener("abort", onAbort);
				const at = await store.position(entry.id);
				if (at === undefined) {
					// Not waiting any more: its turn came (`running`), or it was dropped.
					if ((await store.entry(entry.id))?.state === "running") return;
					throw sessionError(
						"ADMISSION_TIMEOUT",
						"The place of this request in the admission queue was dropped (its process was taken for dead); nothing was queued. Retry.",
					);
				}
				if (at !== position) {
					position = at;
					await told(position);
				}
			}
		} catch (err) {
			await this.release(entry.id);
			this.pump(); // a place ahead of others left: they move up
			void this.announceGroup(entry.tenant, entry.ownerId, entry.id);
			throw err;
		} finally {
			this.waiters.delete(entry.id);
		}
	}

	/**
	 * `run_queued` again for the waiting runs of a group behind `after` (their position changed):
	 * requests' places tell their own waiter, who publishes it.
	 */
	private async announceGroup(tenant: string | null, ownerId: string | null, after: number): Promise<void> {
		try {
			const group = admissionGroup(tenant, ownerId);
			const waiting = (await this.options.store.list()).filter(
				(e) => e.state === "queued" && admissionGroup(e.tenant, e.ownerId) === group,
			);
			// Each on its own session's stream: written together (one commit of the store, not one each).
			await Promise.all(
				[...waiting.entries()]
					.filter(([, e]) => e.id > after && !isRequestPlace(e))
					.map(([i, e]) => this.announce(e, i + 1)),
			);
		} catch (err) {
			this.options.logger.warn({ err }, "admission: the new positions were not published");
		}
	}

	/** `run_queued` on the session's stream; a failure to publish loses no run (it is stored). */
	private async announce(entry: AdmissionEntry, position: number): Promise<void> {
		try {
			await this.options.sessions.publishQueued(entry.sessionId, {
				admissionId: entry.id,
				position,
				queuedAt: entry.enqueuedAt,
			});
		} catch (err) {
			this.options.logger.warn({ err, sessionId: entry.sessionId }, "admission: run_queued not published");
		}
	}

	/** The run of slot `id` started: records it, and gives the slot back when the run ends. */
	private hold(id: number, run: RunHandle): void {
		const { store, logger } = this.options;
		this.held.add(id);
		void store
			.markStarted(id, run.id)
			.catch((err) => logger.warn({ err, runId: run.id }, "admission: the run's start was not recorded"))
			.then(() => {
				this.pump(); // the group's next run may take a free slot now
				return run.done;
			})
			.then(() => this.release(id))
			.then(() => this.pump());
	}

	private async release(id: number): Promise<void> {
		try {
			await this.options.store.release(id);
			this.unreleased.delete(id);
			this.held.delete(id);
		} catch (err) {
			this.unreleased.add(id);
			this.options.logger.warn({ err, admissionId: id }, "admission: a slot could not be given back yet");
		}
	}

	private async tick(): Promise<void> {
		if (this.stopped) return;
		try {
			for (const id of [...this.unreleased]) await this.release(id);
			if (this.held.size > 0 || this.waiters.size > 0) await this.options.store.heartbeat(this.holder, Date.now());
			// On a single node nobody else holds slots: the startup's recovery was all there was to do.
			if (this.options.shared) await this.recover(false);
		} catch (err) {
			this.options.logger.warn({ err }, "admission: the tick failed");
		}
		this.pump();
	}

	/** Slots of dead holders: all others' at startup on a single node, stale ones otherwise. */
	private async recover(startup: boolean): Promise<void> {
		const staleBefore = startup && !this.options.shared ? Number.MAX_SAFE_INTEGER : Date.now() - this.staleMs;
		const n = await this.options.store.recover(this.holder, staleBefore);
		if (n > 0) this.options.logger.info({ recovered: n }, "admission: recovered the slots of a stopped process");
	}

	/** Starts waiting runs while slots are free; one pass at a time, again if asked meanwhile. */
	private pump(): void {
		if (this.pumping) {
			this.pumpAgain = true;
			return;
		}
		this.pumping = this.drain()
			.catch((err) => this.options.logger.warn({ err }, "admission: waiting runs could not be started"))
			.finally(() => {
				this.pumping = undefined;
				if (this.pumpAgain) {
					this.pumpAgain = false;
					this.pump();
				}
			});
	}

	private async drain(): Promise<void> {
		const { store, limits, sessions } = this.options;
		while (!this.stopped && !sessions.isShuttingDown) {
			const entry = await store.claimNext(limits, this.holder, Date.now());
			if (!entry) return;
			// Every run of the group behind it moved up one.
			await this.announceGroup(entry.tenant, entry.ownerId, entry.id);
			if (isRequestPlace(entry)) {
				// Its request starts the run: told at once here; from elsewhere it sees the claim on its next look.
				this.waiters.get(entry.id)?.();
				continue;
			}
			if (!(await this.startWaiting(entry))) return;
		}
	}

	/** Starts a waiting run that took a slot. False when it must wait again (retried on the tick). */
	private async startWaiting(entry: AdmissionEntry): Promise<boolean> {
		const { store, sessions, logger } = this.options;
		try {
			const port = await sessions.open(entry.sessionId, null);
			const result = await port.prompt(entry.messages, "reject", {});
			if (result.kind === "started") this.hold(entry.id, result.run);
			else await this.release(entry.id);
			return true;
		} catch (err) {
			const code = (err as { code?: unknown }).code;
			if (code === "SESSION_NOT_FOUND") {
				logger.info({ sessionId: entry.sessionId }, "admission: a waiting run's session was deleted");
				await this.release(entry.id);
				return true;
			}
			// Busy (a run started by another path), a run limit of this process, shutdown, a budget spent
			// while it waited (it starts once the period ends), the store: later.
			const quiet = ["AGENT_BUSY", "TOO_MANY_RUNS", "SHUTTING_DOWN", "KEY_BUDGET_EXHAUSTED", "TENANT_BUDGET_EXHAUSTED"];
			if (typeof code !== "string" || !quiet.includes(code)) {
				logger.warn({ err, sessionId: entry.sessionId }, "admission: a waiting run could not start");
			}
			await store.requeue(entry.id).catch((requeueErr) => {
				logger.warn(
					{ err: requeueErr, admissionId: entry.id },
					"admission: a waiting run could not be put back in the queue",
				);
			});
			return false;
		}
	}

	/** Waits for the pass under way (tests, shutdown). */
	async settled(): Promise<void> {
		await this.pumping;
	}
}

/**
 * `start` through `admission` ({@link Admission.startWhenAdmitted}), or at once without admission
 * (the run slots of this process refuse it past a limit then).
 */
export function startAdmitted<T>(
	admission: Admission | undefined,
	target: AdmissionTarget,
	start: () => Promise<T>,
	runOf: (started: T) => RunHandle | undefined,
	wait?: AdmissionWait,
): Promise<T> {
	return admission ? admission.startWhenAdmitted(target, start, runOf, wait) : start();
}

/** Aborted once `res` (a request's response) closed before it finished: the client went away. */
export function whenGone(res: { on(event: "close", fn: () => void): unknown; writableFinished: boolean }): AbortSignal {
	const gone = new AbortController();
	res.on("close", () => {
		if (!res.writableFinished) gone.abort(new Error("the client went away while its run waited for a slot"));
	});
	return gone.signal;
}

/** The admission target of a session port (the session's owner counts the slot). */
export function targetOf(port: Pick<SessionPort, "id" | "record">): AdmissionTarget {
	return { sessionId: port.id, ownerId: port.record.ownerId, running: port.record.status === "running" };
}
