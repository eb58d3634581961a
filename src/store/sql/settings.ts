/**
 * The options both SQL stores' write engines take (the event buffer's cap and commit timing),
 * each checked with its allowed range. Each store adds its own (`../sqlite/open.ts`,
 * `../postgres/settings.ts`).
 */
import { checkLimit, maxEventsPerSession, maxIdempotencyKeys } from "../shared.js";
import type { StoreOptions } from "../types.js";

/** The engine options' values, checked, with their defaults. */
export interface EngineSettings {
	maxEventsPerSession: number;
	maxIdempotencyKeys: number;
	flushIntervalMs: number;
	syncDelayMs: number;
	maxBatchEvents: number;
}

/** Checks the engine options (misuse throws with the allowed range). */
export function resolveEngineSettings(
	options: StoreOptions & { flushIntervalMs?: number; syncDelayMs?: number; maxBatchEvents?: number },
): EngineSettings {
	return {
		maxEventsPerSession: maxEventsPerSession(options.maxEventsPerSession),
		maxIdempotencyKeys: maxIdempotencyKeys(options.maxIdempotencyKeysPerSession),
		flushIntervalMs: checkLimit("flushIntervalMs", options.flushIntervalMs, 50, 0, 60_000),
		syncDelayMs: checkLimit("syncDelayMs", options.syncDelayMs, 0, 0, 60_000),
		maxBatchEvents: checkLimit("maxBatchEvents", options.maxBatchEvents, 2000, 1, 1_000_000),
	};
}
