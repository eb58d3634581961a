/**
 * The model calls `POST /api/stream` has in flight, so that a shutdown treats them like runs:
 * once it begins no new call starts, the running ones get the grace period to finish, and the rest
 * are aborted (each still ends its stream with an `error` event saying the server shut down).
 */

/** Why a call was aborted by {@link ProxyStreams.drain} (its signal's `reason`). */
export const SHUTDOWN_ABORT = "server shutting down";

/** How long aborted calls may take to send their last event at shutdown. */
const ABORT_SETTLE_MS = 2_000;

export class ProxyStreams {
	private readonly active = new Map<AbortController, Promise<void>>();
	private closing = false;

	/** True once a shutdown began: new calls are refused (`SHUTTING_DOWN`). */
	get isClosing(): boolean {
		return this.closing;
	}

	/** Tracks a call until `done` settles; `abort` is what a shutdown aborts. */
	track(abort: AbortController, done: Promise<void>): void {
		const settled = done.catch(() => {}).finally(() => this.active.delete(abort));
		this.active.set(abort, settled);
	}

	/** Waits up to `graceMs` for the calls in flight, then aborts the rest and lets them end their streams. */
	async drain(graceMs: number): Promise<void> {
		this.closing = true;
		if (this.active.size === 0) return;
		const all = () => Promise.all(this.active.values()).then(() => "settled" as const);
		if ((await within(all(), graceMs)) === "settled") return;
		for (const abort of this.active.keys()) abort.abort(SHUTDOWN_ABORT);
		await within(all(), ABORT_SETTLE_MS);
	}
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
	let timer: NodeJS.Timeout | undefined;
	const timeout = new Promise<"timeout">((resolve) => {
		timer = setTimeout(() => resolve("timeout"), ms);
	});
	try {
		return await Promise.race([promise, timeout]);
	} finally {
		clearTimeout(timer);
	}
}
