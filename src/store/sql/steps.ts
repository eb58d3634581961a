/**
 * Transaction bodies written once for both drivers. SQLite answers within the call, and a body
 * must finish inside its transaction's callback (no `await` there: the transaction would end
 * first); PostgreSQL answers with promises. A body is a generator that takes each driver answer
 * with `yield* wait(answer)`: `runSteps` resumes it at once with a value, and once the promise
 * settles otherwise, so over SQLite the whole body runs within the call.
 */
import type { Answer } from "./driver.js";

/** A transaction body: yields driver answers, returns its result. */
export type Steps<T> = Generator<unknown, T, unknown>;

/** The value of `answer`, inside a body. */
export function* wait<T>(answer: Answer<T>): Steps<T> {
	return (yield answer) as T;
}

/** Runs `body` to its end: within the call while every answer is a value. */
export function runSteps<T>(body: Steps<T>): Answer<T> {
	let step = body.next();
	while (!step.done && !(step.value instanceof Promise)) step = body.next(step.value);
	return step.done ? step.value : settle(body, step.value as Promise<unknown>);
}

/** The rest of `body` after its first promise; a rejection is thrown into the body at its `wait`. */
async function settle<T>(body: Steps<T>, pending: Promise<unknown>): Promise<T> {
	let waiting = pending;
	for (;;) {
		let settled: { value: unknown } | { error: unknown };
		try {
			settled = { value: await waiting };
		} catch (error) {
			settled = { error };
		}
		let step = "error" in settled ? body.throw(settled.error) : body.next(settled.value);
		while (!step.done && !(step.value instanceof Promise)) step = body.next(step.value);
		if (step.done) return step.value;
		waiting = step.value as Promise<unknown>;
	}
}

/**
 * `runSteps` for a driver that answers within the call (SQLite's transaction callbacks). Throws
 * if an answer was a promise: that driver's statements are synchronous, so it is a bug here.
 */
export function runNow<T>(body: Steps<T>): T {
	const result = runSteps(body);
	if (result instanceof Promise) {
		result.catch(() => undefined); // the throw below reports it
		throw new TypeError("a synchronous driver answered with a promise");
	}
	return result;
}
