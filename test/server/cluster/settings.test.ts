/** Cluster mode's settings: a bad Redis URL or a store other than PostgreSQL stops startup, naming the variable. */
import { describe, expect, it } from "vitest";
import { resolveClusterSettings } from "../../../src/server/cluster/settings.js";
import { ConfigError, loadConfig } from "../../../src/server/config/config.js";

const pgEnv = { WHEELHOUSE_STORE: "postgres", WHEELHOUSE_DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test" };

function problem(env: Record<string, string>): ConfigError {
	try {
		resolveClusterSettings(loadConfig(env));
	} catch (err) {
		if (err instanceof ConfigError) return err;
		throw err;
	}
	throw new Error("expected a ConfigError");
}

describe("cluster settings", () => {
	it("are off without WHEELHOUSE_REDIS_URL", () => {
		expect(resolveClusterSettings(loadConfig(pgEnv))).toBeUndefined();
	});

	it("take a redis:// URL with the postgres store; the prefix defaults to wheelhouse:; each process has its own replica id", () => {
		const env = { ...pgEnv, WHEELHOUSE_REDIS_URL: "redis://127.0.0.1:6379" };
		const settings = resolveClusterSettings(loadConfig(env));
		expect(settings).toMatchObject({ redisUrl: "redis://127.0.0.1:6379", prefix: "wheelhouse:" });
		expect(settings?.replicaId).not.toBe(resolveClusterSettings(loadConfig(env))?.replicaId);
		expect(resolveClusterSettings(loadConfig({ ...env, WHEELHOUSE_REDIS_PREFIX: "staging:" }))?.prefix).toBe(
			"staging:",
		);
	});

	it("refuse a URL that is not redis://, naming WHEELHOUSE_REDIS_URL", () => {
		for (const url of ["http://127.0.0.1:6379", "127.0.0.1:6379", "redis://"]) {
			const err = problem({ ...pgEnv, WHEELHOUSE_REDIS_URL: url });
			expect(err.field).toBe("WHEELHOUSE_REDIS_URL");
		}
	});

	it("refuse a store other than postgres, naming WHEELHOUSE_STORE", () => {
		for (const store of ["sqlite", "memory"]) {
			const err = problem({ WHEELHOUSE_STORE: store, WHEELHOUSE_REDIS_URL: "redis://127.0.0.1:6379" });
			expect(err.field).toBe("WHEELHOUSE_STORE");
			expect(err.message).toContain("postgres");
		}
	});
});
