/**
 * The limits table of docs/security.md ("Limits") is where an operator looks for every bound the
 * server enforces: each limit setting the server has must be a row of it. The settings are taken
 * from the configuration itself, not from a list kept here: the environment variables of
 * config-vars.ts whose names say they bound something (`WHEELHOUSE_MAX_*`, rate limits, budgets,
 * sizes, lifetimes, timeouts), the config-file-only budget keys, and the fields of the config
 * file's `auth` object that bound tenants, tokens and waits (the fields the server's own check
 * names when it refuses an unknown one).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_VARS, ServerConfigSchema } from "../../../src/server/config/config.js";
import { resolveIdentitySettings } from "../../../src/server/config/identity.js";
import { repoRoot } from "../../helpers/main-process.js";

/** Variable names that say they bound something. */
const LIMIT_VAR = /^WHEELHOUSE_MAX_|RATE_LIMIT|BUDGET|_LIMIT$|_BYTES$|_TIMEOUT_MS$|_TTL_MS$/;
/** Names of the patterns above that are not limits on callers, and why. */
const NOT_LIMITS: Record<string, string> = {
	WHEELHOUSE_LEASE_TTL_MS: "how long a replica's lease on a session lasts before another may take it (cluster.md)",
};
/** Config-file keys and `auth` fields that bound something. */
const LIMIT_KEY = /^max|RateLimit|Budgets?$|TimeoutMs$|TtlMs$/;

/** The setting cell of each row of the table headed `| limit | setting | default | past it |`. */
function limitSettings(): string[] {
	const lines = readFileSync(path.join(repoRoot, "docs/security.md"), "utf8").split("\n");
	const limits = lines.indexOf("## Limits");
	expect(limits, "docs/security.md has a Limits section").toBeGreaterThan(-1);
	const start = lines.findIndex((line, i) => i > limits && line.startsWith("| limit | setting | default | past it |"));
	expect(start, "docs/security.md has the limits table under ## Limits").toBeGreaterThan(limits);
	const cells: string[] = [];
	for (const line of lines.slice(start + 2)) {
		if (!line.startsWith("|")) break;
		cells.push(line.split("|")[2]!);
	}
	return cells;
}

/** The fields of the config file's `auth` object, as the server lists them when refusing another. */
function authFields(): string[] {
	let message = "";
	try {
		resolveIdentitySettings({ notAField: true }, []);
	} catch (error) {
		message = (error as Error).message;
	}
	const listed = /is not a field of auth; use (.+)$/.exec(message)?.[1];
	expect(listed, `the auth check names its fields (${message})`).toBeDefined();
	return listed!.split(", ");
}

/** Every limit setting the server has, as the table names it. */
function limitSettingNames(): string[] {
	const envLimits = CONFIG_VARS.map((v) => v.env).filter((env) => LIMIT_VAR.test(env) && !(env in NOT_LIMITS));
	const envKeys = new Set<string>(CONFIG_VARS.map((v) => v.key));
	const fileOnlyLimits = Object.keys(ServerConfigSchema.properties).filter(
		(key) => !envKeys.has(key) && LIMIT_KEY.test(key),
	);
	const authLimits = authFields()
		.filter((field) => LIMIT_KEY.test(field))
		.map((field) => `auth.${field}`);
	return [...envLimits, ...fileOnlyLimits, ...authLimits];
}

describe("docs/security.md limits table", () => {
	it("finds the limit settings the server has, tenant limits included", () => {
		const names = limitSettingNames();
		expect(names).toEqual(
			expect.arrayContaining([
				"WHEELHOUSE_MAX_RUNS_PER_KEY",
				"WHEELHOUSE_RATE_LIMIT_RPM",
				"WHEELHOUSE_BODY_LIMIT",
				"keyBudgets",
				"auth.maxRunsPerTenant",
				"auth.tenantRateLimitPerMinute",
				"auth.tenantBudgets",
				"auth.admissionTimeoutMs",
			]),
		);
		// Each exception is still a variable the server reads, matched by the patterns.
		for (const env of Object.keys(NOT_LIMITS)) {
			expect(CONFIG_VARS.map((v) => v.env)).toContain(env);
			expect(env).toMatch(LIMIT_VAR);
		}
	});

	it("has a row for each of them", () => {
		const settings = limitSettings();
		const missing = limitSettingNames().filter((name) => !settings.some((cell) => cell.includes(`\`${name}\``)));
		expect(missing, "add a row to the Limits table of docs/security.md for each").toEqual([]);
	});
});
