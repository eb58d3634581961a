/**
 * Usage accounting shared by the store implementations: what a batch of transcript messages adds to
 * the usage rows (by owner, UTC day, provider and model, marked with the tenant), and the checks of a usage query. The
 * rows are written with the messages themselves, so they never need the transcript to be read
 * again and cannot drift from it across a crash.
 */
import type { AgentMessage } from "../agent/types.js";
import type { Usage } from "../ai/types.js";
import type { UsageEntry, UsageQuery, UsageRow } from "./types.js";

export type { UsageEntry } from "./types.js";

/** `YYYY-MM-DD` of `at` (epoch ms) in UTC. */
export function utcDay(at: number): string {
	return new Date(at).toISOString().slice(0, 10);
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** True for a `YYYY-MM-DD` that is a real calendar day. */
export function isDay(value: string): boolean {
	return DAY.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) && utcDay(Date.parse(value)) === value;
}

function isUsage(value: unknown): value is Usage {
	const u = value as Usage | undefined;
	return typeof u?.totalTokens === "number" && typeof u.cost?.total === "number";
}

/**
 * The usage entries of messages being appended: one per assistant message (a model call of a run:
 * one turn) and one per message of another role that records a model call of its own (a
 * compaction's summary: `model` is `"provider/id"`, no turn). Messages without usage add nothing,
 * nor does an error message that reports no tokens (a call refused before it was made, e.g. by a
 * budget, is no turn).
 */
export function usageEntriesOf(messages: readonly AgentMessage[]): UsageEntry[] {
	const entries: UsageEntry[] = [];
	for (const m of messages) {
		const message = m as { role?: string; usage?: unknown; provider?: unknown; model?: unknown; timestamp?: unknown };
		if (!isUsage(message.usage)) continue;
		const stopReason = (m as { stopReason?: unknown }).stopReason;
		if (stopReason === "error" && message.usage.totalTokens === 0 && message.usage.cost.total === 0) continue;
		const at = typeof message.timestamp === "number" ? message.timestamp : Date.now();
		if (message.role === "assistant") {
			entries.push({
				day: utcDay(at),
				provider: String(message.provider ?? ""),
				model: String(message.model ?? ""),
				usage: message.usage,
				turns: 1,
			});
		} else if (typeof message.model === "string") {
			const slash = message.model.indexOf("/");
			entries.push({
				day: utcDay(at),
				provider: slash < 0 ? "" : message.model.slice(0, slash),
				model: slash < 0 ? message.model : message.model.slice(slash + 1),
				usage: message.usage,
				turns: 0,
			});
		}
	}
	return entries;
}

/** A zero row for the given key. */
export function zeroRow(
	ownerId: string | null,
	tenant: string | null,
	day: string,
	provider: string,
	model: string,
): UsageRow {
	return {
		ownerId,
		tenant,
		day,
		provider,
		model,
		input: 0,
		output: 0,
		cacheRead: 0,
		cacheWrite: 0,
		totalTokens: 0,
		costUsd: 0,
		turns: 0,
	};
}

/** Adds `entry` to `row` in place. */
export function addEntry(row: UsageRow, entry: UsageEntry): void {
	row.input += entry.usage.input;
	row.output += entry.usage.output;
	row.cacheRead += entry.usage.cacheRead;
	row.cacheWrite += entry.usage.cacheWrite;
	row.totalTokens += entry.usage.totalTokens;
	row.costUsd += entry.usage.cost.total;
	row.turns += entry.turns;
}

/** Throws (caller misuse) unless `query` names two valid days in order (and a non-empty tenant, if any). */
export function checkUsageQuery(query: UsageQuery): void {
	if (query.tenant !== undefined && (typeof query.tenant !== "string" || query.tenant === "")) {
		throw new RangeError(`tenant must be a non-empty string; got ${JSON.stringify(query.tenant)}`);
	}
	for (const field of ["fromDay", "toDay"] as const) {
		if (!isDay(query[field])) {
			throw new RangeError(`${field} must be a day as YYYY-MM-DD; got ${JSON.stringify(query[field])}`);
		}
	}
	if (query.fromDay > query.toDay) {
		throw new RangeError(`fromDay (${query.fromDay}) must not be after toDay (${query.toDay})`);
	}
}

/** Orders rows by day, provider, model, then owner and tenant (the order `readUsage` promises). */
export function compareRows(a: UsageRow, b: UsageRow): number {
	return (
		cmp(a.day, b.day) ||
		cmp(a.provider, b.provider) ||
		cmp(a.model, b.model) ||
		cmp(a.ownerId ?? "", b.ownerId ?? "") ||
		cmp(a.tenant ?? "", b.tenant ?? "")
	);
}

/** Code-point order, as the SQL stores' `COLLATE "C"` / BINARY sort. */
function cmp(a: string, b: string): number {
	return a < b ? -1 : a > b ? 1 : 0;
}
