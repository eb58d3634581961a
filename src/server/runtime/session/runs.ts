/**
 * The runs of one session: claiming the session for a run, the hand-off to an interrupting
 * prompt, a run's start (stored with its prompt) and end (stored with its status and usage), abort
 * and waiting for idle.
 *
 * At most one run at a time (`busy`). `ifBusy: "interrupt"` aborts the active run and hands the
 * session over to the waiting prompt when the aborted run has settled, so no other request can
 * slip in between. The per-key run slot is taken with the claim and given back with the release,
 * never at a hand-off (the waiting prompt keeps it). Claiming here is this process's; the store's
 * `startRun` is the durable claim, and a session the store says is running elsewhere is busy.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Context as TraceContext } from "@opentelemetry/api";
import type { FastifyBaseLogger } from "fastify";
import type { AgentMessage } from "../../../agent/types.js";
import type { AssistantMessage, Usage } from "../../../ai/types.js";
import { addUsage, zeroUsage } from "../../../ai/usage.js";
import type { RunEnd, SessionStore } from "../../../store/types.js";
import { newRunId } from "../ids.js";
import { busyError, sessionError } from "./errors.js";
import type { RunSlots } from "./run-slots.js";

/** A run handle (one `prompt` / `continue`). */
export interface RunHandle {
	id: string;
	seq: number;
	/** Id of the run's first event (`agent_start`). */
	firstEventId: Promise<number>;
	/** Settles when the run is over and the session idle (or handed to the next run). */
	done: Promise<void>;
}

/** The run in progress, with what its end records. */
export interface ActiveRun extends RunHandle {
	usage: Usage;
	/** Resolves `firstEventId` (the first call wins). */
	resolveFirst(id: number): void;
	lastAssistant?: AssistantMessage;
	abortRequested: boolean;
	/**
	 * The trace context of the request that started the run: its spans are children of that
	 * request's server span, however long the run outlives the request. Absent without tracing.
	 */
	trace?: TraceContext;
}

/** What the runs need from their session. */
export interface RunHost {
	readonly sessionId: string;
	readonly store: SessionStore;
	readonly logger: FastifyBaseLogger;
	/** The per-key limit of concurrent runs; absent: none. */
	readonly runSlots?: RunSlots;
	ownerId(): string | null;
	isShuttingDown(): boolean;
	isDeleted(): boolean;
	lastEventId(): number;
	/** Aborts the Agent's run. */
	abortAgent(): void;
	/** The run's start was stored, with `prompt`; the run is active from now on. */
	runStored(runId: string, prompt: AgentMessage[]): void;
	/** A run whose start stored `prompt` failed before it started: the Agent must get the prompt too. */
	runAbandoned(prompt: AgentMessage[]): void;
	/** A run's end was stored (the session's record changed as `end` says). */
	runEnded(runId: string, end: RunEnd): void;
	/** Something happened: the session was active now. */
	touch(): void;
	/** The session has no run any more (none active, none waiting to start). */
	idle?(): void;
	/** Resolves when the store may be asked for the claim (cluster mode: the lease is not being given up). */
	beforeClaim?(): Promise<void> | undefined;
	/**
	 * The store's claim succeeded, and read the session's config version (`updatedAt`) as the
	 * store had it then: before the run starts, the session takes in a config newer than the one
	 * it holds (stored by another replica after this one loaded the session, whose control message
	 * found the session not yet running here and was ignored). A change stored after the claim's
	 * read finds the session busy and is taken in through its control message. Contract: must not
	 * throw.
	 */
	claimed?(updatedAt: number): Promise<void>;
	/**
	 * How long a claim the store refused on a session that is not running is retried (another
	 * replica holds the session's lease for a moment, e.g. right after its run); 0 or absent: not
	 * retried, the run goes on unrecorded as for a session deleted meanwhile.
	 */
	claimRetryMs?: number;
}

export class SessionRuns {
	private busy = false;
	private handoff: (() => void) | undefined;
	private activeRun: ActiveRun | undefined;
	private runSeq = 0;

	constructor(private readonly host: RunHost) {}

	get isBusy(): boolean {
		return this.busy;
	}

	/** The active run, if any. */
	get active(): ActiveRun | undefined {
		return this.activeRun;
	}

	/** The sequence number of the active run, 0 when idle. */
	get currentSeq(): number {
		return this.activeRun?.seq ?? 0;
	}

	/** Takes the session for a run, or throws why it cannot (`ifBusy` decides what a running session does). */
	async claim(ifBusy: "reject" | "interrupt"): Promise<void> {
		const { sessionId } = this.host;
		if (this.host.isShuttingDown())
			throw sessionError("SHUTTING_DOWN", "The server is shutting down; no new runs start.");
		if (this.host.isDeleted()) throw sessionError("SESSION_NOT_FOUND", `Session ${sessionId} was deleted.`);
		if (!this.busy) {
			this.host.runSlots?.acquire(this.host.ownerId());
			this.busy = true;
			return;
		}
		if (ifBusy === "interrupt") {
			if (this.handoff) {
				throw sessionError("AGENT_BUSY", `Session ${sessionId} already has an interrupting prompt waiting to start.`);
			}
			const handedOver = new Promise<void>((resolve) => {
				this.handoff = resolve;
			});
			this.abort();
			await handedOver;
			if (this.host.isDeleted()) {
				this.release();
				throw sessionError("SESSION_NOT_FOUND", `Session ${sessionId} was deleted.`);
			}
			return;
		}
		throw busyError(sessionId);
	}

	private release(): void {
		const next = this.handoff;
		if (next) {
			this.handoff = undefined;
			next(); // `busy` stays true: the waiting prompt owns the session now.
		} else {
			this.busy = false;
			this.host.runSlots?.release(this.host.ownerId());
			this.host.idle?.();
		}
	}

	/**
	 * Starts a run with `start` once the session is claimed. `prompt` (the messages `start` prompts
	 * with) is stored with the run's start, in one write, committed by the store's sync before the
	 * response that accepts it. `attach` runs after the run exists and before its first event, so a
	 * per-run stream sees `agent_start`. `trace` is the starting request's trace context. Rejects with `AGENT_BUSY` when the store's claim fails
	 * because a run of the session is active elsewhere.
	 */
	async launch(
		start: () => Promise<void>,
		attach?: (run: RunHandle) => void,
		prompt: AgentMessage[] = [],
		trace?: TraceContext,
	): Promise<RunHandle> {
		let resolveFirst!: (id: number) => void;
		const firstEventId = new Promise<number>((resolve) => {
			resolveFirst = resolve;
		});
		let firstSeen = false;
		let settle!: () => void;
		const done = new Promise<void>((resolve) => {
			settle = resolve;
		});
		const run: ActiveRun = {
			id: newRunId(),
			seq: ++this.runSeq,
			firstEventId,
			done,
			usage: zeroUsage(),
			abortRequested: false,
			...(trace ? { trace } : {}),
			resolveFirst: (id) => {
				if (firstSeen) return;
				firstSeen = true;
				resolveFirst(id);
			},
		};
		const { sessionId } = this.host;
		// Between the claim and the run's start, a throw (the store refusing the write, an attach
		// that fails) must give the session back: otherwise it stays busy with no run to end it.
		let recorded = false;
		try {
			recorded = await this.claimInStore(run.id, prompt);
			if (recorded) this.host.runStored(run.id, prompt);
			this.activeRun = run;
			this.host.touch();
			attach?.(run);
		} catch (err) {
			this.abandonLaunch(run, recorded ? prompt : undefined, err);
			settle();
			throw err;
		}
		void (async () => {
			try {
				await start();
			} catch (err) {
				// The Agent reports run failures as messages; a throw here is a bug or a lost race.
				this.host.logger.error({ err, sessionId, runId: run.id }, "run failed to start");
				if (this.activeRun === run) this.end(run, err instanceof Error ? err.message : String(err));
			} finally {
				if (this.activeRun === run) this.activeRun = undefined;
				run.resolveFirst(this.host.lastEventId());
				this.host.touch();
				this.release();
				settle();
			}
		})();
		return run;
	}

	/**
	 * The store's claim of the session for run `runId`: true when recorded. Throws `AGENT_BUSY`
	 * when a run of the session is active elsewhere, or (with `claimRetryMs`) when another
	 * process held the session for longer than that.
	 */
	private async claimInStore(runId: string, prompt: AgentMessage[]): Promise<boolean> {
		const { sessionId, store } = this.host;
		const retryMs = this.host.claimRetryMs ?? 0;
		const deadline = Date.now() + retryMs;
		for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
			await this.host.beforeClaim?.();
			const claim = await store.startRun(sessionId, runId, Date.now(), prompt);
			if (claim) {
				await this.host.claimed?.(claim.updatedAt);
				return true;
			}
			const status = (await store.getSession(sessionId))?.status;
			if (status === "running") {
				throw sessionError("AGENT_BUSY", `Session ${sessionId} is running elsewhere; retry once its run ended.`);
			}
			if (status === undefined || retryMs <= 0) return false;
			if (Date.now() >= deadline) {
				throw sessionError("AGENT_BUSY", `Session ${sessionId} is held by another replica; retry in a moment.`);
			}
			await sleep(pause);
		}
	}

	/**
	 * Undoes a launch that threw before its run started and releases the claim. When the run's
	 * start was stored (`stored` is its prompt), the run is ended as failed and the agent gets the
	 * stored prompt too, so its transcript and the store's stay the same.
	 */
	private abandonLaunch(run: ActiveRun, stored: AgentMessage[] | undefined, err: unknown): void {
		if (this.activeRun === run) this.activeRun = undefined;
		if (stored) {
			this.host.runAbandoned(stored);
			try {
				this.end(run, err instanceof Error ? err.message : String(err));
			} catch (endErr) {
				this.host.logger.error(
					{ err: endErr, sessionId: this.host.sessionId, runId: run.id },
					"could not end a run that failed to start",
				);
			}
		}
		run.resolveFirst(this.host.lastEventId());
		this.release();
	}

	/** Counts a completed assistant message of `run` (its usage, and the last one decides the status). */
	noteAssistant(run: ActiveRun, message: AssistantMessage): void {
		run.lastAssistant = message;
		if (message.usage) addUsage(run.usage, message.usage);
	}

	/** Stores the end of `run`: its status (from how it ended), its usage, its error. */
	end(run: ActiveRun, failure?: string): void {
		const last = run.lastAssistant;
		const status = failure
			? "error"
			: last?.stopReason === "aborted" || (run.abortRequested && !last)
				? "aborted"
				: last?.stopReason === "error"
					? "error"
					: "completed";
		const end: RunEnd = {
			status,
			endedAt: Date.now(),
			usage: run.usage,
			...(failure || last?.errorMessage ? { errorMessage: failure ?? last?.errorMessage } : {}),
		};
		if (this.host.store.endRun(this.host.sessionId, run.id, end)) this.host.runEnded(run.id, end);
	}

	/** Aborts the active run (it still ends with `agent_end`). Returns whether a run was active. */
	abort(): boolean {
		const run = this.activeRun;
		if (!run) return false;
		run.abortRequested = true;
		this.host.abortAgent();
		return true;
	}

	/** Resolves when no run is active (including a waiting interrupt's run). */
	async waitForIdle(): Promise<void> {
		while (this.activeRun || this.busy) {
			const run = this.activeRun;
			if (run) await run.done;
			else await new Promise((resolve) => setImmediate(resolve));
		}
	}

	/** The handle of run `runId` while it is the active run; undefined once it is over (or if it never was). */
	activeHandle(runId: string): RunHandle | undefined {
		return this.activeRun?.id === runId ? this.activeRun : undefined;
	}
}
