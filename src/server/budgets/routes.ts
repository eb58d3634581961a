/**
 * `GET /v1/usage`: the tokens and cost the caller's own API key spent (with auth off, everything
 * spent without a key), by day and by model, from the store's usage rows, and its budget.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { SessionStore, UsageRow } from "../../store/types.js";
import { isDay, utcDay } from "../../store/usage.js";
import { apiError } from "../errors.js";
import { responses } from "../schemas.js";
import type { KeyBudgets } from "./key-budgets.js";
import { UsageQuerystring, UsageReport } from "./schemas.js";

/** The longest range one request may ask for. */
const MAX_DAYS = 366;
const DAY_MS = 86_400_000;

type Totals = Pick<UsageRow, "input" | "output" | "cacheRead" | "cacheWrite" | "totalTokens" | "costUsd" | "turns">;

function zero(): Totals {
	return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, costUsd: 0, turns: 0 };
}

function add(into: Totals, row: Totals): void {
	into.input += row.input;
	into.output += row.output;
	into.cacheRead += row.cacheRead;
	into.cacheWrite += row.cacheWrite;
	into.totalTokens += row.totalTokens;
	into.costUsd += row.costUsd;
	into.turns += row.turns;
}

function totalsOf(row: UsageRow): Totals {
	const totals = zero();
	add(totals, row);
	return totals;
}

function checkDay(field: string, value: string): string {
	if (!isDay(value)) {
		throw apiError("INVALID_USAGE_RANGE", `${field}: "${value}" is not a calendar day; send YYYY-MM-DD (UTC).`);
	}
	return value;
}

export const usageRoutes: FastifyPluginAsyncTypebox<{ keyBudgets: KeyBudgets; store: SessionStore }> = async (
	app,
	opts,
) => {
	app.get(
		"/v1/usage",
		{
			schema: {
				tags: ["usage"],
				summary: "Tokens and cost of the caller's API key, by day and by model, and what is left of its budget",
				querystring: UsageQuerystring,
				response: responses({ 200: UsageReport }),
			},
		},
		async function getUsage(request) {
			const ownerId = request.ownerId;
			const to = checkDay("query.to", request.query.to ?? utcDay(Date.now()));
			const from = checkDay("query.from", request.query.from ?? `${to.slice(0, 7)}-01`);
			if (from > to) throw apiError("INVALID_USAGE_RANGE", `query.from (${from}) is after query.to (${to}).`);
			const days = (Date.parse(to) - Date.parse(from)) / DAY_MS + 1;
			if (days > MAX_DAYS) {
				throw apiError(
					"INVALID_USAGE_RANGE",
					`query.from..query.to spans ${days} days; ask for at most ${MAX_DAYS} at a time.`,
				);
			}
			await opts.keyBudgets.load(ownerId);
			const rows = await opts.store.readUsage({ ownerId, fromDay: from, toDay: to });
			const total = zero();
			const byDay = new Map<string, Totals & { day: string }>();
			const byModel = new Map<string, Totals & { provider: string; model: string }>();
			for (const row of rows) {
				add(total, row);
				const day = byDay.get(row.day) ?? { day: row.day, ...zero() };
				add(day, row);
				byDay.set(row.day, day);
				const key = `${row.provider}/${row.model}`;
				const model = byModel.get(key) ?? { provider: row.provider, model: row.model, ...zero() };
				add(model, row);
				byModel.set(key, model);
			}
			return {
				ownerId,
				from,
				to,
				total,
				byDay: [...byDay.values()],
				byModel: [...byModel.values()].sort((a, b) => b.costUsd - a.costUsd || b.totalTokens - a.totalTokens),
				rows: rows.map((row) => ({ day: row.day, provider: row.provider, model: row.model, ...totalsOf(row) })),
				budget: opts.keyBudgets.state(ownerId),
			};
		},
	);
};
