/**
 * Gives V8's young generation back when the server process goes quiet.
 *
 * Startup and every burst of traffic grow the young generation's semi-spaces to their maximum,
 * and V8 shrinks them only at a full collection that finds the allocation rate low; a quiet Node
 * process runs no collection at all, so it keeps that memory for good. Here a timer watches the
 * event loop's utilization, and once the process has been quiet for `quietMs` it asks for a full
 * collection: `vm.measureMemory({ execution: "eager" })` runs one (no flag such as `--expose-gc`
 * needed). V8 judges the allocation rate over its last few seconds of allocation samples, which are
 * taken at collections; the last one before the quiet period still counts everything the burst
 * allocated since the scavenge before it, so this first collection frees the old generation's
 * garbage but often keeps the young generation. It also starts a new sample, nearly empty after
 * `retryMs` more of quiet: the second collection then shrinks the young generation. A collection
 * is skipped when the young generation is at its initial size already; after the second, nothing
 * until the process has been busy again.
 *
 * Cost: one or two full collections per quiet period that follows activity, none while busy, so
 * the young generation keeps its size, and the scavenges their pace, under load. It is a process
 * matter, so the server process starts it (main.ts), not each app.
 */
import { performance } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
import { measureMemory } from "node:vm";

export interface IdleMemoryOptions {
	/** How often the event loop's utilization is sampled. Default 1,000 ms. */
	checkMs?: number;
	/** A sample with at most this utilization (0–1) counts as quiet. Default 0.05. */
	quietUtilization?: number;
	/** Quiet this long after activity: the first full collection. Default 1,000 ms. */
	quietMs?: number;
	/** Still quiet this much longer and the young generation not shrunk: the second and last. Default 6,000 ms. */
	retryMs?: number;
	/** Told of each collection asked for (tests, diagnostics): the young generation's size before and after, bytes. */
	onReclaim?: (youngBefore: number, youngAfter: number) => void;
}

export interface IdleMemory {
	stop(): void;
}

/** The young generation (V8's `new_space`) at most this large is left alone: it is its initial size. */
const SMALL_YOUNG_GENERATION_BYTES = 2 * 1024 * 1024;

function youngGenerationBytes(): number {
	return getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0;
}

/**
 * One full collection, soon: `vm.measureMemory` with eager execution. The API is marked
 * experimental, so Node prints an ExperimentalWarning on its first use; that line would only
 * puzzle an operator (nothing experimental is being measured, the result is not read), so that
 * one warning is held back for the duration of this call. Every other warning passes.
 */
function askForFullCollection(): Promise<unknown> {
	const emitWarning = process.emitWarning;
	process.emitWarning = function withoutMeasureMemoryNotice(
		this: NodeJS.Process,
		warning: string | Error,
		...rest: unknown[]
	) {
		const text = typeof warning === "string" ? warning : warning.message;
		if (text.includes("vm.measureMemory")) return;
		return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
	} as typeof process.emitWarning;
	try {
		return measureMemory({ execution: "eager" });
	} catch (error) {
		return Promise.reject(error);
	} finally {
		process.emitWarning = emitWarning;
	}
}

/** Starts watching; the timer never keeps the process alive. */
export function startIdleMemory(options: IdleMemoryOptions = {}): IdleMemory {
	const checkMs = options.checkMs ?? 1000;
	const quietUtilization = options.quietUtilization ?? 0.05;
	const attemptsAt = [options.quietMs ?? 1000, (options.quietMs ?? 1000) + (options.retryMs ?? 6000)];
	let last = performance.eventLoopUtilization();
	/** Quiet time so far (ms), counted in samples. */
	let quietFor = 0;
	/** Collections asked for in this quiet period. */
	let attempts = 0;
	/** Activity since the young generation was last found small. */
	let grown = true;
	/** The next sample includes a collection of ours: it does not count as activity. */
	let ownWork = false;
	let stopped = false;

	const reclaim = () => {
		const before = youngGenerationBytes();
		if (before <= SMALL_YOUNG_GENERATION_BYTES) {
			grown = false;
			return;
		}
		ownWork = true;
		askForFullCollection().then(
			() => {
				const after = youngGenerationBytes();
				if (after <= SMALL_YOUNG_GENERATION_BYTES) grown = false;
				if (!stopped) options.onReclaim?.(before, after);
			},
			() => undefined, // not supported here: nothing to give back
		);
	};

	const timer = setInterval(() => {
		const now = performance.eventLoopUtilization();
		const { utilization } = performance.eventLoopUtilization(now, last);
		last = now;
		if (ownWork) {
			ownWork = false;
			quietFor += checkMs;
			return;
		}
		if (utilization > quietUtilization) {
			quietFor = 0;
			attempts = 0;
			grown = true;
			return;
		}
		quietFor += checkMs;
		if (!grown || attempts >= attemptsAt.length || quietFor < attemptsAt[attempts]!) return;
		attempts++;
		reclaim();
	}, checkMs);
	timer.unref();

	return {
		stop() {
			stopped = true;
			clearInterval(timer);
		},
	};
}
