/**
 * The session list's filter (`SessionFilter` of records.ts) as a predicate over records, for the
 * memory store, and the checks every store applies to it first.
 */
import type { SessionFilter, SessionRecord } from "./records.js";

/** At most this many metadata pairs per filter (each is a condition every row is tested with). */
export const MAX_FILTER_METADATA = 8;

/** A metadata key a filter may name: no quotes or backslashes (they are written into a JSON path). */
const KEY_PATTERN = /^[^"\\]{1,100}$/;

/** True when the filter has any condition. */
export function hasFilter(filter: SessionFilter | undefined): filter is SessionFilter {
	return (
		filter !== undefined &&
		(filter.status !== undefined ||
			filter.updatedAfter !== undefined ||
			filter.updatedBefore !== undefined ||
			Object.keys(filter.metadata ?? {}).length > 0)
	);
}

/** Throws (caller misuse) on a filter no store accepts. */
export function checkFilter(filter: SessionFilter): void {
	const keys = Object.keys(filter.metadata ?? {});
	if (keys.length > MAX_FILTER_METADATA) {
		throw new RangeError(`filter.metadata: at most ${MAX_FILTER_METADATA} pairs (got ${keys.length})`);
	}
	for (const key of keys) {
		if (!KEY_PATTERN.test(key))
			throw new RangeError(`filter.metadata: key "${key}" must be 1-100 characters without " or \\`);
	}
}

export function matchesFilter(record: SessionRecord, filter: SessionFilter): boolean {
	if (filter.status !== undefined && record.status !== filter.status) return false;
	if (filter.updatedAfter !== undefined && !(record.updatedAt > filter.updatedAfter)) return false;
	if (filter.updatedBefore !== undefined && !(record.updatedAt < filter.updatedBefore)) return false;
	for (const [key, value] of Object.entries(filter.metadata ?? {})) {
		if (record.metadata[key] !== value) return false;
	}
	return true;
}
