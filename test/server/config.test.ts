import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_VARS, ConfigError, loadConfig, redactConfig } from "../../src/server/config.js";

function configError(fn: () => unknown): ConfigError {
	try {
		fn();
	} catch (err) {
		if (err instanceof ConfigError) return err;
		throw err;
	}
	throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
	it("has documented defaults", () => {
		const config = loadConfig({});
		expect(config).toMatchObject({
			port: 3000,
			host: "127.0.0.1",
			logLevel: "info",
			logFormat: "auto",
			apiKeys: [],
			fauxDelayMs: 30,
			heartbeatMs: 15000,
			store: "sqlite",
			dbPath: "./data/wheelhouse.db",
		});
		for (const v of CONFIG_VARS) expect(v.description.length, v.env).toBeGreaterThan(10);
	});

	it("reads env vars, lists and provider keys", () => {
		const config = loadConfig({
			PORT: "8080",
			WHEELHOUSE_API_KEYS: "key-one-123456, key-two-123456",
			WHEELHOUSE_CORS_ORIGINS: "https://a.example,https://b.example",
			WHEELHOUSE_STORE: "memory",
			OPENAI_API_KEY: "sk-test",
		});
		expect(config.port).toBe(8080);
		expect(config.apiKeys).toEqual(["key-one-123456", "key-two-123456"]);
		expect(config.corsOrigins).toEqual(["https://a.example", "https://b.example"]);
		expect(config.store).toBe("memory");
		expect(config.providerKeys.openai).toBe("sk-test");
		const redacted = JSON.stringify(redactConfig(config));
		expect(redacted).not.toContain("sk-test");
		expect(redacted).not.toContain("key-one");
	});

	it("a bad value stops startup naming the variable and the reason", () => {
		const notInt = configError(() => loadConfig({ PORT: "eighty" }));
		expect(notInt.field).toBe("PORT");
		expect(notInt.message).toMatch(/PORT: must be an integer/);
		const range = configError(() => loadConfig({ PORT: "70000" }));
		expect(range.field).toBe("PORT");
		const store = configError(() => loadConfig({ WHEELHOUSE_STORE: "mysql" }));
		expect(store.field).toBe("WHEELHOUSE_STORE");
		const model = configError(() => loadConfig({ WHEELHOUSE_DEFAULT_MODEL: "no-slash" }));
		expect(model.field).toBe("WHEELHOUSE_DEFAULT_MODEL");
		const shortKey = configError(() => loadConfig({ WHEELHOUSE_API_KEYS: "short" }));
		expect(shortKey.field).toBe("WHEELHOUSE_API_KEYS");
	});

	it("the postgres store needs a PostgreSQL URL; a bad one stops startup naming the field, never the password", () => {
		const missing = configError(() => loadConfig({ WHEELHOUSE_STORE: "postgres" }));
		expect(missing.field).toBe("WHEELHOUSE_DATABASE_URL");
		expect(missing.message).toMatch(/postgres:\/\/user:password@host:5432\/database/);
		for (const url of [
			"mysql://u:hunter22@db:3306/w",
			"postgres://u:hunter22@db:5432",
			"postgres://u:hunter22@db:99999/w",
		]) {
			const bad = configError(() => loadConfig({ WHEELHOUSE_STORE: "postgres", WHEELHOUSE_DATABASE_URL: url }));
			expect(bad.field).toBe("WHEELHOUSE_DATABASE_URL");
			expect(bad.message).not.toContain("hunter22");
		}
		const schema = configError(() =>
			loadConfig({
				WHEELHOUSE_STORE: "postgres",
				WHEELHOUSE_DATABASE_URL: "postgres://u@db/w",
				WHEELHOUSE_DATABASE_SCHEMA: "Bad-Name",
			}),
		);
		expect(schema.field).toBe("WHEELHOUSE_DATABASE_SCHEMA");
		const config = loadConfig({
			WHEELHOUSE_STORE: "postgres",
			WHEELHOUSE_DATABASE_URL: "postgresql://u:hunter22@db:5432/w",
			WHEELHOUSE_DATABASE_POOL_SIZE: "4",
		});
		expect([config.databaseUrl, config.databaseSchema, config.databasePoolSize]).toEqual([
			"postgresql://u:hunter22@db:5432/w",
			"public",
			4,
		]);
		expect(JSON.stringify(redactConfig(config))).not.toContain("hunter22");
	});

	it("short API keys stop startup with the rule, never the key", () => {
		const err = configError(() => loadConfig({ WHEELHOUSE_API_KEYS: "key1,key2" }));
		expect(err.field).toBe("WHEELHOUSE_API_KEYS");
		expect(err.message).toMatch(/at least 8 characters; key 1 of 2 has 4/);
		expect(err.message).not.toContain("key1");
	});

	it("a CORS origin without its scheme stops startup with the origin to write instead", () => {
		for (const [origin, fix] of [
			["example.com", "https://example.com"],
			["https://example.com/", "https://example.com"],
			["localhost:5173", "https://localhost:5173"],
		]) {
			const err = configError(() => loadConfig({ WHEELHOUSE_CORS_ORIGINS: `https://ok.example,${origin}` }));
			expect(err.field).toBe("WHEELHOUSE_CORS_ORIGINS");
			expect(err.message).toContain(`"${origin}" is not an origin`);
			expect(err.message).toContain(`"${fix}"`);
		}
		expect(loadConfig({ WHEELHOUSE_CORS_ORIGINS: "*" }).corsOrigins).toEqual(["*"]);
		expect(loadConfig({ WHEELHOUSE_CORS_ORIGINS: "http://localhost:5173" }).corsOrigins).toEqual([
			"http://localhost:5173",
		]);
	});

	it("a WHEELHOUSE_ variable the server does not read stops startup with the closest one", () => {
		const plural = configError(() => loadConfig({ WHEELHOUSE_API_KEY: "long-enough-key" }));
		expect(plural.field).toBe("WHEELHOUSE_API_KEY");
		expect(plural.message).toMatch(/not a Wheelhouse variable; did you mean WHEELHOUSE_API_KEYS\?/);
		expect(configError(() => loadConfig({ WHEELHOUSE_PORT: "8080" })).message).toMatch(/did you mean PORT\?/);
		expect(configError(() => loadConfig({ WHEELHOUSE_SQL_URL: "x" })).message).toMatch(
			/the variables are: PORT, .*WHEELHOUSE_DB/,
		);
		// Other variables are not the server's business.
		expect(loadConfig({ HOME: "/root", WHEELHOUSEKEEPER: "x" }).port).toBe(3000);
	});

	it("reads a JSON config file, env wins over it, unknown fields are rejected", () => {
		const dir = mkdtempSync(join(tmpdir(), "wh-config-"));
		const file = join(dir, "config.json");
		writeFileSync(file, JSON.stringify({ port: 9000, maxQueuedMessages: 7, providerKeys: { anthropic: "a-key" } }));
		const config = loadConfig({ WHEELHOUSE_CONFIG: file, PORT: "9001" });
		expect(config.port).toBe(9001);
		expect(config.maxQueuedMessages).toBe(7);
		expect(config.providerKeys.anthropic).toBe("a-key");

		writeFileSync(file, JSON.stringify({ prot: 1 }));
		const unknown = configError(() => loadConfig({ WHEELHOUSE_CONFIG: file }));
		expect(unknown.message).toContain("prot");
		writeFileSync(file, JSON.stringify({ maxSessions: 0 }));
		const bad = configError(() => loadConfig({ WHEELHOUSE_CONFIG: file }));
		expect(bad.field).toBe(`${file}: maxSessions`);
		writeFileSync(file, "{ nope");
		expect(configError(() => loadConfig({ WHEELHOUSE_CONFIG: file })).field).toBe("WHEELHOUSE_CONFIG");
	});
});
