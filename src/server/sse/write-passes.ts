/**
 * The write scheduler of one app's SSE connections: when frames are handed to sockets, and the
 * durability barriers (the store's `sync()`) that run before they are. `buildApp` creates one per
 * app, so two apps in one process share no timer, no barrier and no count.
 *
 * Per-write cost (a syscall that also wakes the reader), not JSON, is what limits SSE throughput:
 * a write costs as much as producing a few dozen events. So writes go out in *passes*: one pass
 * writes every connection that has frames waiting, one `write()` each. A connection whose frames
 * arrive after a quiet spell is written at the end of the current event-loop turn (no added
 * latency); while events keep coming, passes are spaced so that writing takes at most about a
 * tenth of the time: the gap after a pass is WRITE_SPACING times the passes' duration (a moving
 * average of the writes of streams in flow), at least MIN_GAP_MS and at most MAX_GAP_MS. One
 * stream then gets a write per millisecond; many busy streams get one write each per pass instead
 * of one per event, and the added latency stays below MAX_GAP_MS (bench/sse/results.md compares
 * the spacings).
 *
 * A pass first runs the barriers (the store's `sync()`: a commit when writes wait for one). While
 * they have work waiting and frames keep coming, passes are up to COMMIT_GAP_MS apart, so that
 * under load many sessions' run starts, completed messages and run ends share one commit instead
 * of one pass each. Once no frame has been queued for QUIET_MS the pass runs: a quiet server (or
 * the last stream of a burst) still commits and writes at once.
 */

const MIN_GAP_MS = 1;
const MAX_GAP_MS = 16;
const WRITE_SPACING = 9;
const COMMIT_GAP_MS = 8;
const QUIET_MS = 1;
/** Weight of the latest pass in the moving average of pass durations. */
const PASS_AVERAGING = 0.25;

/** What runs before any frame is handed to a socket (see {@link WritePasses.addBarrier}). */
export interface WriteBarrier {
	/** Makes what the frames depend on durable (the store's `sync()`). */
	run(): void;
	/** True while `run` has work to do (a commit waits). */
	readonly pending: boolean;
}

/** A connection as the passes see it. */
export interface PassWriter {
	/**
	 * Hands what is pending to the socket (the barriers have run). Returns true for a write of a
	 * stream in flow (not its head, not its end): what the passes time.
	 */
	writePending(): boolean;
}

export class WritePasses {
	private readonly waiting = new Set<PassWriter>();
	private readonly barriers = new Set<WriteBarrier>();
	private scheduled = false;
	private lastPassAt = Number.NEGATIVE_INFINITY;
	private lastCommitAt = Number.NEGATIVE_INFINITY;
	private gapMs = MIN_GAP_MS;
	/** Moving average of the passes' durations (ms). */
	private passMs = 0;
	/** Frames queued on any connection so far (a busy server is told from a quiet one by it). */
	private framesQueued = 0;
	/** `framesQueued` when the scheduled pass last looked. */
	private framesSeen = 0;

	constructor() {
		this.run = this.run.bind(this);
	}

	/**
	 * Registers `barrier` to run before frames are written to any SSE socket of this app (the
	 * response head of a stream included): the server registers its store's `sync()`, so the
	 * writes an event depends on (its run's start, its message, its run's end) are committed before
	 * any client can see it. Returns the function that removes it.
	 */
	addBarrier(barrier: WriteBarrier): () => void {
		this.barriers.add(barrier);
		return () => this.barriers.delete(barrier);
	}

	/** Runs every barrier now (a connection that ends outside a pass). */
	runBarriers(): void {
		for (const barrier of this.barriers) barrier.run();
	}

	/** A connection queued a frame. */
	noteFrame(): void {
		this.framesQueued++;
	}

	/** Queues `writer` for the next pass (scheduling one if needed). */
	add(writer: PassWriter): void {
		this.waiting.add(writer);
		if (this.scheduled) return;
		this.scheduled = true;
		this.schedule(performance.now());
	}

	private barriersPending(): boolean {
		for (const barrier of this.barriers) if (barrier.pending) return true;
		return false;
	}

	/** While a commit waits: milliseconds until the commit spacing is over (0: not waiting). */
	private commitWait(now: number): number {
		return this.barriersPending() ? this.lastCommitAt + COMMIT_GAP_MS - now : 0;
	}

	/**
	 * Runs the pass when the write spacing is over; while a commit waits, and as long as frames keep
	 * coming, up to the commit spacing (looking again every QUIET_MS).
	 */
	private schedule(now: number): void {
		const writeWait = this.lastPassAt + this.gapMs - now;
		if (writeWait > 0) {
			setTimeout(this.run, writeWait);
			return;
		}
		const commitWait = this.commitWait(now);
		if (commitWait > 0) this.lookAgain(commitWait);
		else setImmediate(this.run);
	}

	/** Notes the frames queued so far and runs the pass again in QUIET_MS (or when the commit spacing is over). */
	private lookAgain(commitWait: number): void {
		this.framesSeen = this.framesQueued;
		setTimeout(this.run, Math.min(commitWait, QUIET_MS));
	}

	private run(): void {
		const start = performance.now();
		const commitWait = this.commitWait(start);
		if (commitWait > 0 && this.framesQueued !== this.framesSeen) {
			this.lookAgain(commitWait);
			return;
		}
		this.scheduled = false;
		// Connections queued by a write's side effects (a close handler) go to the next pass.
		const batch = [...this.waiting];
		this.waiting.clear();
		if (this.barriersPending()) this.lastCommitAt = start;
		this.runBarriers(); // once for the whole pass
		// Only the writes of streams in flow count: a stream's head and its end are one-offs that
		// would otherwise hold the next frames of every stream.
		let took = 0;
		for (const writer of batch) {
			const t0 = performance.now();
			if (writer.writePending()) took += performance.now() - t0;
		}
		this.lastPassAt = start;
		// Averaged, so one slow pass (a garbage collection) does not hold an interactive session's next
		// frames for up to MAX_GAP_MS; sustained load converges to the rule.
		this.passMs += (took - this.passMs) * PASS_AVERAGING;
		this.gapMs = Math.min(MAX_GAP_MS, Math.max(MIN_GAP_MS, this.passMs * (1 + WRITE_SPACING)));
	}
}
