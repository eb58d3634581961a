/**
 * `GET /v1/usage`: the tokens and cost the caller's own API key spent (with auth off, everything
 * spent without a key), by day and by model, from the store's usage rows, and its budgets (key and
 * tenant). With `scope=tenant`, a tenant admin (a JWT with the scope `auth.usageAdminScope`, or an
 * API key of `auth.usageAdminKeys`) reads every caller's of its own tenant, by owner too; no caller
 * can name another tenant.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { SessionStore, UsageRow } from "../../../store/types.js";
import { isDay, utcDay } from "../../../store/usage.js";
import type { KeyBudgets } from "../../runtime/budgets/key-budgets.js";
import { UsageQuerystring, UsageReport } from "../../runtime/budgets/schemas.js";
import type { TenantBudgets } from "../../runtime/budgets/tenant-budgets.js";
import { apiError } from "../errors.js";
import { routePlugin } from "../plugins.js";
import { responses } from "../schemas.js";

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

function checkDay(field: string, value: string): string {
	if (!isDay(value)) {
		throw apiError("INVALID_USAGE_RANGE", `${field}: "${value}" is not a calendar day; send YYYY-MM-DD (UTC).`);
	}
	return value;
}

/** Sums `rows` by `keyOf`, each group starting from `init(row)`. */
function grouped<T extends object>(
	rows: readonly UsageRow[],
	keyOf: (row: UsageRow) => string,
	init: (row: UsageRow) => T,
) {
	const groups = new Map<string, T & Totals>();
	for (const row of rows) {
		const key = keyOf(row);
		const group = groups.get(key) ?? { ...init(row), ...zero() };
		add(group, row);
		groups.set(key, group);
	}
	return [...groups.values()];
}

export interface UsageRouteOptions {
	keyBudgets: KeyBudgets;
	tenantBudgets: TenantBudgets;
	/** The JWT scope that opens `scope=tenant`. */
	usageAdminScope: string;
	/** The owner ids of the API keys that may ask for `scope=tenant`. */
	usageAdminKeyOwners: ReadonlySet<string>;
	store: SessionStore;
}

export const usageRoutes: FastifyPluginAsyncTypebox<UsageRouteOptions> = routePlugin(
	"wheelhouse-usage",
	async (app, opts) => {
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
				const tenant = request.principal?.tenant ?? null;
				const scope = request.query.scope ?? "own";
				if (scope === "tenant") {
					const principal = request.principal;
					// A JWT with the scope, or an API key named admin; never a client token (it acts for its
					// issuer on one session only).
					const admin =
						(principal?.kind === "jwt" && principal.scopes.includes(opts.usageAdminScope)) ||
						(principal?.kind === "key" && opts.usageAdminKeyOwners.has(principal.ownerId));
					if (!admin || tenant === null) {
						throw apiError(
							"USAGE_SCOPE_REQUIRED",
							`query.scope: "tenant" needs a JWT with the scope "${opts.usageAdminScope}" (or an API key of ` +
								"auth.usageAdminKeys) and a tenant; without it, leave scope out to read your own usage.",
						);
					}
				}
				await opts.keyBudgets.load(ownerId);
				await opts.tenantBudgets.refresh(tenant);
				const rows =
					scope === "tenant"
						? await opts.store.readUsage({ ownerId, tenant: tenant as string, fromDay: from, toDay: to })
						: await opts.store.readUsage({ ownerId, fromDay: from, toDay: to });
				const total = zero();
				for (const row of rows) add(total, row);
				const byModel = grouped(
					rows,
					(r) => `${r.provider}/${r.model}`,
					(r) => ({ provider: r.provider, model: r.model }),
				);
				const byCost = (a: Totals, b: Totals) => b.costUsd - a.costUsd || b.totalTokens - a.totalTokens;
				return {
					ownerId,
					scope,
					tenant,
					from,
					to,
					total,
					byDay: grouped(
						rows,
						(r) => r.day,
						(r) => ({ day: r.day }),
					),
					byModel: byModel.sort(byCost),
					...(scope === "tenant"
						? {
								byOwner: grouped(
									rows,
									(r) => r.ownerId ?? "",
									(r) => ({ ownerId: r.ownerId ?? "" }),
								).sort(byCost),
							}
						: {}),
					// Rows are per owner: a tenant's are summed by day and model.
					rows: grouped(
						rows,
						(r) => `${r.day}\n${r.provider}/${r.model}`,
						(r) => ({ day: r.day, provider: r.provider, model: r.model }),
					),
					budget: opts.keyBudgets.state(ownerId),
					tenantBudget: opts.tenantBudgets.state(tenant),
				};
			},
		);
	},
);
