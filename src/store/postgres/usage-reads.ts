/**
 * The PostgreSQL store's usage read (`UsageStore` of ../types.ts): the `usage_daily` rows as
 * `UsageRow`s. The rows are written with the messages they count (`run-writes.ts`).
 */
import type { UsageQuery, UsageRow } from "../types.js";
import { checkUsageQuery } from "../usage.js";
import type { Read } from "./connection.js";

/** A row of `usage_daily`. */
interface UsageDailyRow {
	owner_id: string;
	day: string;
	provider: string;
	model: string;
	input: number;
	output: number;
	cache_read: number;
	cache_write: number;
	total_tokens: number;
	cost_usd: number;
	turns: number;
}

/** See `UsageStore.readUsage`. */
export async function readUsage(read: Read, query: UsageQuery): Promise<UsageRow[]> {
	checkUsageQuery(query);
	const rows = await read<UsageDailyRow>(
		"SELECT * FROM usage_daily WHERE owner_id = $1 AND day >= $2 AND day <= $3 ORDER BY day, provider, model",
		[query.ownerId ?? "", query.fromDay, query.toDay],
	);
	return rows.map((r) => ({
		ownerId: r.owner_id === "" ? null : r.owner_id,
		day: r.day,
		provider: r.provider,
		model: r.model,
		input: r.input,
		output: r.output,
		cacheRead: r.cache_read,
		cacheWrite: r.cache_write,
		totalTokens: r.total_tokens,
		costUsd: r.cost_usd,
		turns: r.turns,
	}));
}
