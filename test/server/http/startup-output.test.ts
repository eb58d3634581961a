/**
 * What the real process (`src/main.ts`) writes when it starts, read from its stdout and stderr:
 * every stdout line a JSON log line; one line when it listens; one line, no stack, when it cannot
 * (port in use, Redis unreachable, an open API beyond loopback); the environment Kubernetes gives a
 * pod of a namespace with a Service named `wheelhouse` and the webhook config of docs/operations.md as pasted
 * start it; with `OTEL_*` set it says where spans go, and says when they cannot get there.
 */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, repoRoot, type SpawnedMain, spawnMain, stopAll } from "../../helpers/main-process.js";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
	stopAll();
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface LogLine {
	level: number;
	msg: string;
	[field: string]: unknown;
}

/** Every stdout line parsed as JSON (a line that is not fails the test, naming it). */
function logLines(run: SpawnedMain): LogLine[] {
	return run
		.stdout()
		.split("\n")
		.filter((line) => line !== "")
		.map((line) => {
			try {
				return JSON.parse(line) as LogLine;
			} catch {
				throw new Error(`a stdout line is not a JSON log line: ${line}`);
			}
		});
}

/** Resolves once stdout matches `pattern`; rejects with the output if the process exits first. */
function waitForStdout(run: SpawnedMain, pattern: RegExp, timeoutMs = 30_000): Promise<void> {
	return new Promise((resolve, reject) => {
		const timer = setTimeout(
			() => reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${run.stdout()}`)),
			timeoutMs,
		);
		const check = () => {
			if (!pattern.test(run.stdout())) return;
			clearTimeout(timer);
			run.child.stdout!.off("data", check);
			resolve();
		};
		run.child.stdout!.on("data", check);
		run.child.once("exit", (code) => {
			clearTimeout(timer);
			reject(new Error(`exited with ${code} before ${pattern}:\n${run.stdout()}${run.stderr()}`));
		});
		check();
	});
}

async function exitOf(run: SpawnedMain): Promise<number | null> {
	if (run.child.exitCode !== null) return run.child.exitCode;
	const [code] = (await once(run.child, "exit")) as [number | null];
	return code;
}

/** The webhooks config block of docs/operations.md, as pasted into a file. */
function readmeWebhookConfig(): string {
	const readme = readFileSync(path.join(repoRoot, "docs/operations.md"), "utf8");
	const section = readme.slice(readme.indexOf("## Webhooks"));
	const block = /```json\n([\s\S]*?)```/.exec(section)?.[1];
	expect(block, "docs/operations.md's Webhooks section has a JSON config").toBeDefined();
	// biome-ignore lint/suspicious/noTemplateCurlyInString: the docs' config-file reference, resolved by the server
	expect(block).toContain("${WHEELHOUSE_HOOK_SECRET}");
	const dir = mkdtempSync(path.join(tmpdir(), "wh-readme-webhooks-"));
	cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
	const file = path.join(dir, "wheelhouse.json");
	writeFileSync(file, block!);
	return file;
}

describe("startup output of the real process", () => {
	it("starts in a pod next to a Service named wheelhouse, with the webhook config of docs/operations.md as pasted", {
		timeout: 60_000,
	}, async () => {
		const run = spawnMain({
			LOG_FORMAT: "json",
			WHEELHOUSE_CONFIG: readmeWebhookConfig(),
			// The docs' way to make a secret: whsec_ + base64 of 32 random bytes.
			WHEELHOUSE_HOOK_SECRET: `whsec_${randomBytes(32).toString("base64")}`,
			WHEELHOUSE_PORT: "tcp://10.0.0.1:3000",
			WHEELHOUSE_SERVICE_HOST: "10.0.0.1",
			WHEELHOUSE_SERVICE_PORT: "3000",
			WHEELHOUSE_PORT_3000_TCP: "tcp://10.0.0.1:3000",
			WHEELHOUSE_PORT_3000_TCP_PROTO: "tcp",
			WHEELHOUSE_PORT_3000_TCP_PORT: "3000",
			WHEELHOUSE_PORT_3000_TCP_ADDR: "10.0.0.1",
		});
		await waitForStdout(run, /listening on/);
		const lines = logLines(run);
		const warnings = lines.filter((line) => line.level === 40 && line.variable !== undefined);
		expect(warnings.map((line) => [line.variable, line.msg])).toEqual([
			[
				"WHEELHOUSE_PORT",
				'WHEELHOUSE_PORT=tcp://10.0.0.1:3000 is ignored: Kubernetes sets it for a Service named "wheelhouse"; the server listens on PORT (0)',
			],
		]);
		// The webhook endpoint of the docs is configured; its secret is not in the log.
		const config = lines.find((line) => line.msg === "configuration")!.config as { webhooks: unknown };
		expect(JSON.stringify(config.webhooks)).toContain("https://hooks.example.com/wheelhouse");
		expect(run.stdout()).not.toContain("whsec_");
		expect(run.stderr()).toBe("");
		run.child.kill("SIGTERM");
		expect(await exitOf(run)).toBe(0);
	});

	it("says it listens in one line, logs its configuration with secrets only redacted, and every stdout line is JSON", {
		timeout: 60_000,
	}, async () => {
		const run = spawnMain({
			LOG_FORMAT: "json",
			HOST: "127.0.0.1",
			WHEELHOUSE_API_KEYS: "startup-output-key-1",
			WHEELHOUSE_MAX_RUNS_PER_KEY: "2",
			WHEELHOUSE_METRICS_AUTH: "none",
		});
		await waitForStdout(run, /listening on/);
		const listening = logLines(run).filter((line) => /listening/i.test(line.msg));
		expect(listening).toHaveLength(1);
		expect(listening[0]!.msg).toMatch(/^Wheelhouse listening on http:\/\/127\.0\.0\.1:\d+/);
		// The configuration line hides the key, and only secrets: settings about keys are readable.
		const config = logLines(run).find((line) => line.msg === "configuration")!.config;
		expect(config).toMatchObject({ maxRunsPerKey: 2, metricsAuth: "none", auth: "keys", apiKeys: "[redacted]" });
		expect(run.stdout()).not.toContain("startup-output-key-1");
		run.child.kill("SIGTERM");
		expect(await exitOf(run)).toBe(0);
		expect(run.stderr()).toBe("");
	});

	it("a port in use is one line, no stack, and exit code 1", { timeout: 60_000 }, async () => {
		const taken = createServer().listen(0, "127.0.0.1");
		await once(taken, "listening");
		cleanups.push(() => new Promise<void>((resolve) => taken.close(() => resolve())));
		const port = (taken.address() as { port: number }).port;
		const run = spawnMain({ LOG_FORMAT: "json", HOST: "127.0.0.1", PORT: String(port) });
		expect(await exitOf(run)).toBe(1);
		const errors = logLines(run).filter((line) => line.level >= 50);
		expect(errors.map((line) => line.msg)).toEqual([
			`cannot listen on 127.0.0.1:${port}: the port is in use by another process; stop it or set PORT to a free port`,
		]);
		expect(run.stdout()).not.toMatch(/\bat .+:\d+:\d+/);
		expect(run.stderr()).toBe("");
	});

	it("the metrics port in use names WHEELHOUSE_METRICS_PORT, in one line", { timeout: 60_000 }, async () => {
		const taken = createServer().listen(0, "127.0.0.1");
		await once(taken, "listening");
		cleanups.push(() => new Promise<void>((resolve) => taken.close(() => resolve())));
		const port = (taken.address() as { port: number }).port;
		const run = spawnMain({ LOG_FORMAT: "json", HOST: "127.0.0.1", WHEELHOUSE_METRICS_PORT: String(port) });
		expect(await exitOf(run)).toBe(1);
		expect(
			logLines(run)
				.filter((line) => line.level >= 50)
				.map((line) => line.msg),
		).toEqual([
			`cannot listen on 127.0.0.1:${port}: the port is in use by another process; stop it or set WHEELHOUSE_METRICS_PORT to a free port`,
		]);
	});

	it("an unreachable Redis is said once, with the reason", { timeout: 60_000 }, async () => {
		const schema = `startup_redis_${process.pid}_${Date.now()}`;
		const url = "postgres://postgres@127.0.0.1:5432/test";
		cleanups.push(async () => {
			const client = new pg.Client({ connectionString: url });
			await client.connect();
			await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
			await client.end();
		});
		const redisPort = await freePort();
		const run = spawnMain({
			LOG_FORMAT: "json",
			WHEELHOUSE_STORE: "postgres",
			WHEELHOUSE_DATABASE_URL: url,
			WHEELHOUSE_DATABASE_SCHEMA: schema,
			WHEELHOUSE_REDIS_URL: `redis://127.0.0.1:${redisPort}`,
		});
		expect(await exitOf(run)).toBe(1);
		const output = `${run.stdout()}${run.stderr()}`;
		const redisLines = output.split("\n").filter((line) => /redis/i.test(line));
		expect(redisLines).toEqual([
			`Invalid configuration: WHEELHOUSE_REDIS_URL: cannot reach Redis at redis://127.0.0.1:${redisPort}: connect ECONNREFUSED 127.0.0.1:${redisPort}`,
		]);
		logLines(run);
	});

	it("refuses an open API beyond loopback in one line; WHEELHOUSE_AUTH=none serves it with a warning", {
		timeout: 60_000,
	}, async () => {
		const refused = spawnMain({ LOG_FORMAT: "json", HOST: "0.0.0.0" });
		expect(await exitOf(refused)).toBe(1);
		expect(refused.stdout()).toBe("");
		expect(refused.stderr().trimEnd().split("\n")).toEqual([
			"Invalid configuration: WHEELHOUSE_API_KEYS: the server would listen on 0.0.0.0, beyond this machine, with no API key: set WHEELHOUSE_API_KEYS=<key>[,<key>...] (e.g. `openssl rand -hex 32`), or WHEELHOUSE_AUTH=none to serve it open on purpose",
		]);

		const open = spawnMain({ LOG_FORMAT: "json", HOST: "0.0.0.0", WHEELHOUSE_AUTH: "none" });
		await waitForStdout(open, /listening on/);
		const warning = logLines(open).find((line) => line.variable === "WHEELHOUSE_AUTH");
		expect(warning?.level).toBe(40);
		expect(warning?.msg).toMatch(/^WHEELHOUSE_AUTH=none: the API on 0\.0\.0\.0:0 is open to anyone/);
		const address = logLines(open).find((line) => /listening on/.test(line.msg))!.address as string;
		expect(
			(
				await fetch(`${address}/v1/sessions`, {
					method: "POST",
					body: "{}",
					headers: { "content-type": "application/json" },
				})
			).status,
		).toBe(201);
		open.child.kill("SIGTERM");
		expect(await exitOf(open)).toBe(0);
	});

	it("with OTEL_* set says that tracing is on and where; a collector that is down is logged, once", {
		timeout: 60_000,
	}, async () => {
		const collector = await freePort();
		const run = spawnMain({
			LOG_FORMAT: "json",
			HOST: "127.0.0.1",
			OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector}`,
			OTEL_SERVICE_NAME: "wheelhouse-startup-test",
			OTEL_BSP_SCHEDULE_DELAY: "50",
			OTEL_EXPORTER_OTLP_TIMEOUT: "500",
		});
		await waitForStdout(run, /listening on/);
		const on = logLines(run).find((line) => /^tracing on/.test(line.msg));
		expect(on?.msg).toBe(
			`tracing on: spans of service "wheelhouse-startup-test" exported to http://127.0.0.1:${collector}/v1/traces (OTLP http/protobuf)`,
		);
		const address = logLines(run).find((line) => /listening on/.test(line.msg))!.address as string;
		// Request spans, exported in several batches (50 ms apart, each failing within 500 ms).
		await fetch(`${address}/v1/models`);
		await waitForStdout(run, /could not be exported/);
		for (let i = 0; i < 4; i++) {
			await fetch(`${address}/v1/models`);
			await new Promise((resolve) => setTimeout(resolve, 700));
		}
		const failures = logLines(run).filter((line) => /could not be exported/.test(line.msg));
		expect(failures).toHaveLength(1);
		expect(failures[0]!.level).toBe(40);
		expect(failures[0]!.msg).toMatch(
			new RegExp(`^tracing: spans could not be exported to http://127\\.0\\.0\\.1:${collector}/v1/traces \\(.+\\)`),
		);
		run.child.kill("SIGTERM");
		await exitOf(run);
	});
});
