/**
 * The PostgreSQL store's usage (`UsageStore` of ../types.ts): the `usage_daily` rows as
 * `UsageRow`s, and the calls of no session added to them. The rows of sessions' calls are written
 * with the messages they count (`run-writes.ts`).
 */
import { toUsageRow, type UsageDailyRow } from "../sql/rows.js";
import type { UsageQuery, UsageRow } from "../types.js";
import { checkUsageQuery, type UsageEntry } from "../usage.js";
import type { Queryable, Read } from "./connection.js";

/** See `UsageStore.recordUsage`: adds `entries` to the rows of `owner` (`""`: no owner) in `tx`. */
export async function recordUsage(tx: Queryable, owner: string, entries: readonly UsageEntry[]): Promise<void> {
	await tx.query(
		`INSERT INTO usage_daily AS u (owner_id, day, provider, model, input, output, cache_read, cache_write,
		 total_tokens, cost_usd, turns)
		SELECT $1, day, provider, model, sum(input), sum(output), sum(cache_read), sum(cache_write),
		 sum(total_tokens), sum(cost_usd), sum(turns)
		FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[],
		 $9::bigint[], $10::float8[], $11::bigint[])
		 AS t(day, provider, model, input, output, cache_read, cache_write, total_tokens, cost_usd, turns)
		GROUP BY day, provider, model
		ON CONFLICT (owner_id, day, provider, model) DO UPDATE SET input = u.input + excluded.input,
		 output = u.output + excluded.output, cache_read = u.cache_read + excluded.cache_read,
		 cache_write = u.cache_write + excluded.cache_write, total_tokens = u.total_tokens + excluded.total_tokens,
		 cost_usd = u.cost_usd + excluded.cost_usd, turns = u.turns + excluded.turns`,
		[
			owner,
			entries.map((e) => e.day),
			entries.map((e) => e.provider),
			entries.map((e) => e.model),
			entries.map((e) => e.usage.input),
			entries.map((e) => e.usage.output),
			entries.map((e) => e.usage.cacheRead),
			entries.map((e) => e.usage.cacheWrite),
			entries.map((e) => e.usage.totalTokens),
			entries.map((e) => e.usage.cost.total),
			entries.map((e) => e.turns),
		],
	);
}

/** See `UsageStore.readUsage`. */
export async function readUsage(read: Read, query: UsageQuery): Promise<UsageRow[]> {
	checkUsageQuery(query);
	const rows = await read<UsageDailyRow>(
		"SELECT * FROM usage_daily WHERE owner_id = $1 AND day >= $2 AND day <= $3 ORDER BY day, provider, model",
		[query.ownerId ?? "", query.fromDay, query.toDay],
	);
	return rows.map(toUsageRow);
}
