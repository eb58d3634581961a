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
 * A pass first awaits the barriers (the store's `sync()`: a commit when writes or buffered events
 * wait for one, so no client is sent an event a crash could take back; a stream of deltas alone,
 * which the store keeps in memory only, leaves it nothing to commit). The barrier covers the writes
 * and events made before it is called, so the pass first *cuts* each connection's frames: what was
 * queued up to then is written once the barrier resolves, and frames queued while it is awaited
 * (the writes they depend on may be newer than the commit) wait for the next pass.
 * When no barrier has anything to wait for, the pass writes at once, with no cut. A pass never
 * waits for a commit to be worth it: the commit runs when the pass does, and under load many
 * sessions' run starts, completed messages, run ends and events share it because they were all
 * made since the last pass.
 */

const MIN_GAP_MS = 1;
const MAX_GAP_MS = 16;
const WRITE_SPACING = 9;
/** Weight of the latest pass in the moving average of pass durations. */
const PASS_AVERAGING = 0.25;

/** What runs before any frame is handed to a socket (see {@link WritePasses.addBarrier}). */
export interface WriteBarrier {
	/**
	 * Makes what the frames queued before the call depend on durable, their events included (the
	 * store's `sync()`).
	 * Contract: never rejects (a failed commit is the store's to report).
	 */
	run(): Promise<void>;
	/** True while `run` has work to do (a commit waits). */
	readonly pending: boolean;
}

/** A connection as the passes see it. */
export interface PassWriter {
	/** Marks the frames queued so far: the next `writePending` writes those only. */
	cut(): void;
	/**
	 * Hands what is pending (up to the cut, if one was made) to the socket: the barriers have run.
	 * Returns true for a write of a stream in flow (not its head, not its end): what the passes time.
	 */
	writePending(): boolean;
}

export class WritePasses {
	private readonly waiting = new Set<PassWriter>();
	private readonly barriers = new Set<WriteBarrier>();
	private scheduled = false;
	private lastPassAt = Number.NEGATIVE_INFINITY;
	private gapMs = MIN_GAP_MS;
	/** Moving average of the passes' durations (ms). */
	private passMs = 0;

	constructor() {
		this.run = this.run.bind(this);
	}

	/**
	 * Registers `barrier` to run before frames are written to any SSE socket of this app (the
	 * response head of a stream included): the server registers its store's `sync()`, so an event
	 * and the writes it depends on (its run's start, its message, its run's end) are committed
	 * before any client can see it. Returns the function that removes it.
	 */
	addBarrier(barrier: WriteBarrier): () => void {
		this.barriers.add(barrier);
		return () => this.barriers.delete(barrier);
	}

	/**
	 * Calls `write` once the barriers cover what `writer` queued so far: at once when none has work
	 * waiting, else after cutting its frames and awaiting them (a connection that ends outside a pass).
	 */
	afterBarriers(writer: PassWriter, write: () => void): void {
		if (!this.barriersPending()) {
			write();
			return;
		}
		writer.cut();
		void this.runBarriers().then(write);
	}

	/** Runs every barrier; resolves when all have. */
	private runBarriers(): Promise<unknown> {
		if (this.barriers.size === 1) for (const barrier of this.barriers) return barrier.run();
		return Promise.all([...this.barriers].map((barrier) => barrier.run()));
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

	/** Runs the pass when the write spacing is over (at the end of this event-loop turn if it is). */
	private schedule(now: number): void {
		const writeWait = this.lastPassAt + this.gapMs - now;
		if (writeWait > 0) setTimeout(this.run, writeWait);
		else setImmediate(this.run);
	}

	private run(): void {
		const start = performance.now();
		this.scheduled = false;
		// Connections queued by a write's side effects (a close handler) go to the next pass.
		const batch = [...this.waiting];
		this.waiting.clear();
		if (!this.barriersPending()) {
			this.write(batch, start);
			return;
		}
		for (const writer of batch) writer.cut();
		void this.runBarriers().then(() => this.write(batch, start)); // once for the whole pass
	}

	/** Writes `batch` (the barriers have run) and sets the spacing of the next pass. */
	private write(batch: PassWriter[], start: number): void {
		// Only the writes of streams in flow count: a stream's head and its end are one-offs that
		// would otherwise hold the next frames of every stream.
		// One clock read per write: the end of one write is the start of the next.
		let took = 0;
		let before = performance.now();
		for (const writer of batch) {
			const flowing = writer.writePending();
			const after = performance.now();
			if (flowing) took += after - before;
			before = after;
		}
		this.lastPassAt = start;
		// Averaged, so one slow pass (a garbage collection) does not hold an interactive session's next
		// frames for up to MAX_GAP_MS; sustained load converges to the rule.
		this.passMs += (took - this.passMs) * PASS_AVERAGING;
		this.gapMs = Math.min(MAX_GAP_MS, Math.max(MIN_GAP_MS, this.passMs * (1 + WRITE_SPACING)));
	}
}
