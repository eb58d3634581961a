/**
 * The writer thread of the SQLite store with `eventWriter: "thread"`: a worker with its own
 * connection that commits the event batches, so the SQLite work of the SSE hot path (UTF-8
 * encoding, b-tree and WAL writes) runs on another core, and runs the WAL checkpoints beside them.
 * Without it (the default) the same worker runs in checkpoint-only mode while much is written
 * (`checkpoints.ts`): it copies the WAL into the database beside the store's commits, and never
 * takes the write lock.
 *
 * Protocol: the main thread posts `{ seq, batches }` messages in order; the worker commits each
 * message in one transaction, then stores `seq` in a shared Int32Array and notifies. The main
 * thread can therefore wait *synchronously* (`Atomics.wait`) for everything it sent, which keeps
 * the store's interface synchronous: every durable write first waits for the writer, so the event
 * log on disk is never behind a message, run or queue change the server acknowledged. The commit
 * barrier waits for it without blocking the event loop (`Atomics.waitAsync`). Write errors come
 * back on a MessagePort read synchronously with `receiveMessageOnPort`.
 *
 * The worker source is plain CommonJS evaluated from a string, so the same code runs from `dist/`,
 * under tsx and under vitest without a separate build artifact.
 */
import { createRequire } from "node:module";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";

/** One session's buffered events, written as one `event_batches` row. */
export interface EventBatch {
	sessionId: string;
	first: number;
	last: number;
	data: string;
	/** Delete this session's batches with `last_id <= trimFloor` (0: no trimming). */
	trimFloor: number;
}

const ACK = 0;
const STATE = 1;
const STATE_READY = 1;
const STATE_FAILED = 2;
/** The WAL bound (`walLimitBytes`): past it the writer thread truncates the WAL; inline, SQLite cuts the file back to it. */
export const DEFAULT_WAL_LIMIT_BYTES = 64 * 1024 * 1024;
/** How often the WAL is checkpointed (`checkpointIntervalMs`). */
export const DEFAULT_CHECKPOINT_INTERVAL_MS = 1000;

/** Longest wait for the writer before it is declared stuck. */
const WAIT_LIMIT_MS = 30_000;

/** `Atomics.waitAsync` (Node 16 on; its type comes with ES2024, and this project compiles against ES2023). */
const waitAsync = (
	Atomics as unknown as {
		waitAsync(
			array: Int32Array,
			index: number,
			value: number,
			timeoutMs: number,
		): { async: false; value: string } | { async: true; value: Promise<string> };
	}
).waitAsync;

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const shared = new Int32Array(workerData.shared);
const errors = workerData.errorPort;
let db;
try {
	const Database = require(workerData.driver);
	db = new Database(workerData.path);
	db.pragma("journal_mode = WAL");
	db.pragma("synchronous = " + workerData.synchronous);
	db.pragma("busy_timeout = 10000");
	const insert = db.prepare("INSERT INTO event_batches (session_id, last_id, first_id, data) VALUES (?, ?, ?, ?)");
	const trim = db.prepare("DELETE FROM event_batches WHERE session_id = ? AND last_id <= ?");
	const write = db.transaction((batches) => {
		for (const b of batches) {
			insert.run(b.sessionId, b.last, b.first, b.data);
			if (b.trimFloor > 0) trim.run(b.sessionId, b.trimFloor);
		}
	});
	// The main connection does not checkpoint (so its commits never pay for it); this thread does.
	// A PASSIVE checkpoint never blocks the writer, but under continuous writes it never catches up
	// either, so the WAL is never restarted and grows with everything written.
	// - Writer mode: past the limit, a TRUNCATE checkpoint resets the file; right after a PASSIVE one
	//   it has only the newest frames left to copy. It takes the write lock first and then waits for
	//   every reader of the WAL, so it runs without a busy timeout: waiting (for our writer, or for a
	//   reader such as a backup holding an old snapshot) would hold the server's writers past their
	//   own busy timeout. It gives up at once instead, and the next interval tries again.
	// - Checkpoint-only mode: the store's connection is the only writer, and a TRUNCATE would stop
	//   its commits (the event loop) for the copy, two fsyncs and the truncation of a large file,
	//   waiting in SQLite's busy handler, whose timeout counts sleeps that any signal (a CPU
	//   profiler's) cuts short. Past half the limit the thread asks the store instead (a "walFull"
	//   message): one RESTART checkpoint there, between its transactions, copies the frames written
	//   since this thread's copy and starts the WAL over. Until the store answers, this thread does
	//   not checkpoint: beside one of its checkpoints the store's would give up.
	const pageSize = db.pragma("page_size", { simple: true });
	const truncate = () => {
		db.pragma("busy_timeout = 0");
		try {
			db.pragma("wal_checkpoint(TRUNCATE)");
		} finally {
			db.pragma("busy_timeout = 10000");
		}
	};
	let storeCheckpoints = false;
	const checkpoints = setInterval(() => {
		if (storeCheckpoints) return;
		try {
			const [result] = db.pragma("wal_checkpoint(PASSIVE)");
			if (!result) return;
			if (workerData.checkpointOnly) {
				if (result.log * pageSize <= workerData.walLimitBytes / 2) return;
				// Once more first: what was written during the first copy, so the store has less left to copy.
				db.pragma("wal_checkpoint(PASSIVE)");
				storeCheckpoints = true;
				parentPort.postMessage({ walFull: true });
			} else if (result.log * pageSize > workerData.walLimitBytes) {
				truncate();
			}
		} catch {}
	}, workerData.checkpointIntervalMs);
	checkpoints.unref();
	parentPort.on("message", (m) => {
		if (m.walFullDone) {
			storeCheckpoints = false;
			return;
		}
		if (m.close) {
			clearInterval(checkpoints);
			try { db.pragma("wal_checkpoint(PASSIVE)"); db.close(); } catch {}
			Atomics.store(shared, 0, m.seq);
			Atomics.notify(shared, 0);
			parentPort.close();
			return;
		}
		try {
			write(m.batches);
		} catch (e) {
			errors.postMessage({ seq: m.seq, message: String((e && e.message) || e) });
		}
		Atomics.store(shared, 0, m.seq);
		Atomics.notify(shared, 0);
	});
	Atomics.store(shared, 1, 1);
	Atomics.notify(shared, 1);
} catch (e) {
	errors.postMessage({ seq: 0, message: String((e && e.message) || e) });
	Atomics.store(shared, 1, 2);
	Atomics.notify(shared, 1);
}
`;

export class EventWriter {
	private readonly worker: Worker;
	private readonly shared: Int32Array;
	private readonly errors: MessagePort;
	private sent = 0;
	private closed = false;
	private ready = false;

	/**
	 * Starts the writer on `path` (already migrated). Does not wait for the thread to boot (that takes
	 * tens of milliseconds): the first `send`/`wait` does, and throws if it could not open the database.
	 * With `onWalFull` it is a checkpoint-only thread: it never takes the write lock, and calls
	 * `onWalFull` (on this thread, from the event loop) after a checkpoint that left the WAL past half
	 * of `walLimitBytes`, for the store's connection to finish the copy and start the WAL over; the
	 * thread does not checkpoint until `onWalFull` has returned.
	 */
	constructor(
		path: string,
		synchronous: "NORMAL" | "FULL",
		checkpoints: { walLimitBytes: number; checkpointIntervalMs: number } = {
			walLimitBytes: DEFAULT_WAL_LIMIT_BYTES,
			checkpointIntervalMs: DEFAULT_CHECKPOINT_INTERVAL_MS,
		},
		onWalFull?: () => void,
	) {
		const buffer = new SharedArrayBuffer(8);
		this.shared = new Int32Array(buffer);
		const { port1, port2 } = new MessageChannel();
		this.errors = port1;
		const driver = createRequire(import.meta.url).resolve("better-sqlite3");
		this.worker = new Worker(WORKER_SOURCE, {
			eval: true,
			workerData: {
				path,
				synchronous,
				shared: buffer,
				errorPort: port2,
				driver,
				checkpointOnly: onWalFull !== undefined,
				...checkpoints,
			},
			transferList: [port2],
		});
		if (onWalFull) {
			this.worker.on("message", (m: { walFull?: boolean }) => {
				if (!m.walFull || this.closed) return;
				try {
					onWalFull();
				} finally {
					this.worker.postMessage({ walFullDone: true });
				}
			});
		}
		this.worker.unref();
	}

	private ensureReady(): void {
		if (this.ready) return;
		Atomics.wait(this.shared, STATE, 0, WAIT_LIMIT_MS);
		const state = Atomics.load(this.shared, STATE);
		if (state !== STATE_READY) {
			const error = this.takeError();
			throw new Error(
				`session store: the event log writer thread failed to start: ${error ?? (state === STATE_FAILED ? "unknown error" : "no answer within 30 s")}`,
			);
		}
		this.ready = true;
	}

	/** True once the thread has opened the database and runs (non-blocking check). */
	get started(): boolean {
		return Atomics.load(this.shared, STATE) === STATE_READY;
	}

	/** True once the thread reported that it could not open the database (non-blocking check). */
	get failed(): boolean {
		return Atomics.load(this.shared, STATE) === STATE_FAILED;
	}

	/** Why the thread failed, for a log line. */
	failureMessage(): string {
		return `the background writer thread failed to start: ${this.takeError() ?? "unknown error"}`;
	}

	/** Messages sent but not yet committed. */
	get outstanding(): number {
		return this.sent - Atomics.load(this.shared, ACK);
	}

	/** Hands batches to the writer; returns at once. */
	send(batches: EventBatch[]): void {
		this.ensureReady();
		this.sent++;
		this.worker.postMessage({ seq: this.sent, batches });
	}

	/**
	 * Blocks until at most `outstanding` messages are uncommitted (0: all committed). Returns the
	 * first write error the writer reported since the last call, if any.
	 */
	wait(outstanding = 0): string | undefined {
		if (this.sent === 0) return undefined;
		const target = this.sent - outstanding;
		const deadline = Date.now() + WAIT_LIMIT_MS;
		for (;;) {
			const acked = Atomics.load(this.shared, ACK);
			if (acked >= target) break;
			if (Date.now() > deadline) throw new Error("event log writer thread did not answer within 30 s");
			Atomics.wait(this.shared, ACK, acked, 1000);
		}
		return this.takeError();
	}

	/**
	 * Resolves once every message sent so far is committed (or the writer closed), without blocking
	 * the event loop; with the first write error the writer reported since the last call, if any.
	 * Rejects when the writer does not answer within the limit of {@link wait}.
	 */
	async committed(): Promise<string | undefined> {
		const target = this.sent;
		const deadline = Date.now() + WAIT_LIMIT_MS;
		for (;;) {
			const acked = Atomics.load(this.shared, ACK);
			if (acked >= target || this.closed) return this.takeError();
			if (Date.now() > deadline) throw new Error("event log writer thread did not answer within 30 s");
			const waiting = waitAsync(this.shared, ACK, acked, 1000);
			if (waiting.async) await waiting.value;
		}
	}

	/** A write error reported by the writer, if any (non-blocking). */
	takeError(): string | undefined {
		let first: string | undefined;
		for (let m = receiveMessageOnPort(this.errors); m; m = receiveMessageOnPort(this.errors)) {
			first ??= (m.message as { message: string }).message;
		}
		return first;
	}

	/**
	 * Waits for every sent batch, then stops the thread (its connection is closed first, after one
	 * more checkpoint). A thread that was never sent anything is terminated at once, unless
	 * `finalCheckpoint` asks for that last checkpoint (a checkpoint-only thread that has run). Idempotent.
	 */
	close(finalCheckpoint = false): string | undefined {
		if (this.closed) return undefined;
		this.closed = true;
		if (this.sent === 0 && (!finalCheckpoint || Atomics.load(this.shared, STATE) !== STATE_READY)) {
			// Never used: no write can be pending, so stop the thread without waiting for it to boot.
			void this.worker.terminate();
			this.errors.close();
			return undefined;
		}
		const error = this.wait();
		this.sent++;
		this.worker.postMessage({ seq: this.sent, close: true });
		this.wait();
		this.errors.close();
		return error;
	}
}
