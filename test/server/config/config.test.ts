import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
	CONFIG_VARS,
	ConfigError,
	configWarnings,
	loadConfig,
	redactConfig,
} from "../../../src/server/config/config.js";

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

	it("a WHEELHOUSE_ variable the server does not read is a warning with the closest one, never a stop", () => {
		const warned = (env: Record<string, string>) => configWarnings(env, loadConfig(env));
		expect(warned({ WHEELHOUSE_API_KEY: "long-enough-key" })).toEqual([
			{
				variable: "WHEELHOUSE_API_KEY",
				message: "WHEELHOUSE_API_KEY is not a Wheelhouse variable and is ignored; did you mean WHEELHOUSE_API_KEYS?",
			},
		]);
		expect(warned({ WHEELHOUSE_PORT: "8080" })[0]!.message).toMatch(/did you mean PORT\?/);
		expect(warned({ WHEELHOUSE_SQL_URL: "x" })[0]!.message).toMatch(/the variables are: PORT, .*WHEELHOUSE_DB/);
		// Other variables are not the server's business.
		expect(warned({ HOME: "/root", WHEELHOUSEKEEPER: "x" })).toEqual([]);
		expect(loadConfig({ WHEELHOUSE_API_KEY: "long-enough-key", WHEELHOUSE_SQL_URL: "x" }).port).toBe(3000);
	});

	it("the variables Kubernetes injects for a Service named wheelhouse start the server; WHEELHOUSE_PORT=tcp:// is named, not used", () => {
		const env = {
			WHEELHOUSE_PORT: "tcp://10.0.0.1:3000",
			WHEELHOUSE_SERVICE_HOST: "10.0.0.1",
			WHEELHOUSE_SERVICE_PORT: "3000",
			WHEELHOUSE_SERVICE_PORT_HTTP: "3000",
			WHEELHOUSE_PORT_3000_TCP: "tcp://10.0.0.1:3000",
			WHEELHOUSE_PORT_3000_TCP_PROTO: "tcp",
			WHEELHOUSE_PORT_3000_TCP_PORT: "3000",
			WHEELHOUSE_PORT_3000_TCP_ADDR: "10.0.0.1",
			// A Service named wheelhouse-redis, and one named wheelhouse-metrics (whose _PORT is a variable of ours).
			WHEELHOUSE_REDIS_SERVICE_HOST: "10.0.0.2",
			WHEELHOUSE_REDIS_PORT: "tcp://10.0.0.2:6379",
			WHEELHOUSE_METRICS_PORT: "tcp://10.0.0.3:9090",
			PORT: "8080",
		};
		const config = loadConfig(env);
		expect(config.port).toBe(8080);
		expect(config.metricsPort).toBe(0);
		const warnings = configWarnings(env, config);
		expect(warnings.map((w) => w.variable)).toEqual(["WHEELHOUSE_PORT", "WHEELHOUSE_METRICS_PORT"]);
		expect(warnings[0]!.message).toBe(
			'WHEELHOUSE_PORT=tcp://10.0.0.1:3000 is ignored: Kubernetes sets it for a Service named "wheelhouse"; the server listens on PORT (8080)',
		);
		// A real number in WHEELHOUSE_METRICS_PORT is still the setting.
		expect(loadConfig({ WHEELHOUSE_METRICS_PORT: "9464" }).metricsPort).toBe(9464);
	});

	// biome-ignore lint/suspicious/noTemplateCurlyInString: the config file's reference syntax
	it("a variable the config file references as ${NAME} is not unknown", () => {
		const dir = mkdtempSync(join(tmpdir(), "wh-config-"));
		const file = join(dir, "config.json");
		writeFileSync(
			file,
			JSON.stringify({
				// biome-ignore lint/suspicious/noTemplateCurlyInString: a config-file reference, resolved by the server
				webhooks: { endpoints: [{ url: "https://hooks.example.com/w", secret: "${WHEELHOUSE_HOOK_SECRET}" }] },
				models: [
					{
						provider: "p",
						id: "m",
						baseUrl: "http://x/v1",
						// biome-ignore lint/suspicious/noTemplateCurlyInString: a config-file reference, resolved by the server
						headers: { "x-k": "Bearer ${WHEELHOUSE_MODEL_TOKEN}" },
					},
				],
			}),
		);
		const env = {
			WHEELHOUSE_CONFIG: file,
			WHEELHOUSE_HOOK_SECRET: "whsec_x",
			WHEELHOUSE_MODEL_TOKEN: "t",
			WHEELHOUSE_HOOK_SECRETS: "typo",
		};
		expect(configWarnings(env, loadConfig(env)).map((w) => w.variable)).toEqual(["WHEELHOUSE_HOOK_SECRETS"]);
	});

	it("listening beyond loopback needs API keys, or WHEELHOUSE_AUTH=none on purpose (then a warning)", () => {
		for (const host of ["0.0.0.0", "::", "10.1.2.3", "wheelhouse.internal"]) {
			const err = configError(() => loadConfig({ HOST: host }));
			expect(err.field).toBe("WHEELHOUSE_API_KEYS");
			expect(err.message).toBe(
				`Invalid configuration: WHEELHOUSE_API_KEYS: the server would listen on ${host}, beyond this machine, with no API key: set WHEELHOUSE_API_KEYS=<key>[,<key>...] (e.g. \`openssl rand -hex 32\`), or WHEELHOUSE_AUTH=none to serve it open on purpose`,
			);
		}
		for (const host of ["127.0.0.1", "127.0.1.1", "localhost", "::1", "[::1]"]) {
			const config = loadConfig({ HOST: host });
			expect(configWarnings({ HOST: host }, config), host).toEqual([]);
		}
		expect(loadConfig({ HOST: "0.0.0.0", WHEELHOUSE_API_KEYS: "a-long-key-123" }).apiKeys).toHaveLength(1);
		const open = { HOST: "0.0.0.0", WHEELHOUSE_AUTH: "none" };
		expect(configWarnings(open, loadConfig(open))).toEqual([
			{
				variable: "WHEELHOUSE_AUTH",
				message: "WHEELHOUSE_AUTH=none: the API on 0.0.0.0:3000 is open to anyone who can reach it, without a key",
			},
		]);
		const both = configError(() => loadConfig({ ...open, WHEELHOUSE_API_KEYS: "a-long-key-123" }));
		expect(both.message).toMatch(/WHEELHOUSE_AUTH: is `none` \(no authentication\) but WHEELHOUSE_API_KEYS is set/);
		expect(configError(() => loadConfig({ WHEELHOUSE_AUTH: "off" })).message).toMatch(
			/WHEELHOUSE_AUTH: must be one of: keys, none/,
		);
	});

	it("the configuration log hides secrets only: settings about keys stay readable", () => {
		const config = loadConfig({
			WHEELHOUSE_API_KEYS: "a-long-key-123",
			WHEELHOUSE_MAX_RUNS_PER_KEY: "2",
			WHEELHOUSE_METRICS_AUTH: "none",
			WHEELHOUSE_WEBHOOK_URL: "https://hooks.example.com/w",
			WHEELHOUSE_WEBHOOK_SECRET: "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0",
		});
		const redacted = redactConfig(config);
		expect(redacted).toMatchObject({
			maxRunsPerKey: 2,
			metricsAuth: "none",
			auth: "keys",
			apiKeys: ["[redacted]"],
			webhookSecret: "[redacted]",
		});
		expect(redactConfig(loadConfig({})).webhookSecret).toBe("");
		expect(JSON.stringify(redacted)).not.toContain("a-long-key");
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
