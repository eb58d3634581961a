/**
 * Polling a condition the store answers (a run ended on another replica, a task settled): what the
 * facades do where no event tells them, because the change may happen in another process.
 */
import { setTimeout as sleep } from "node:timers/promises";

/** Resolves once `done` holds (checked every `everyMs`), or `waitMs` passed, or `signal` fired. */
export async function pollUntil(
	waitMs: number,
	everyMs: number,
	done: () => Promise<boolean>,
	signal?: AbortSignal,
): Promise<void> {
	const deadline = Date.now() + waitMs;
	while (Date.now() < deadline && !signal?.aborted) {
		if (await done()) return;
		await sleep(everyMs, undefined, { ref: false });
	}
}
