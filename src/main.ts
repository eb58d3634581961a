/**
 * The server process: config → store → buildApp → listen; SIGTERM/SIGINT → graceful shutdown.
 *
 * Startup: a run the last process left active is marked interrupted (`markInterruptedRuns`); once
 * the app is ready, and before it listens, its session's stream says so and the session goes on
 * per its `onInterrupt` policy (`resumeAfterRestart`).
 *
 * Shutdown (the order is in app.ts's close hook): /readyz turns 503, after
 * `WHEELHOUSE_SHUTDOWN_DELAY_MS` stop listening, let running runs finish within
 * `WHEELHOUSE_SHUTDOWN_GRACE_MS`, then abort the rest (each still emits `agent_end` to its
 * streams), close every stream and its connection, flush and close the store, exit 0. A second
 * signal exits at once.
 */
import { pathToFileURL } from "node:url";
import type { AgentTool } from "./agent/types.js";
import { redactUrl } from "./ai/redact-url.js";
import { resolveClusterSettings } from "./server/cluster/settings.js";
import { ConfigError, loadConfig, redactConfig } from "./server/config/config.js";
import { A2aPushReporter } from "./server/facades/a2a/push.js";
import { buildApp } from "./server/http/app.js";
import { listenAndAnnounce } from "./server/http/listen.js";
import { WebhookEvents } from "./server/observability/webhooks/events.js";
import { resolveWebhookSettings } from "./server/observability/webhooks/settings.js";
import { markInterruptedRuns, resumeAfterRestart } from "./server/runtime/recovery.js";
import { openStore, PostgresSessionStore } from "./store/index.js";
import type { SessionStore } from "./store/types.js";

async function loadToolModules(paths: string[]): Promise<AgentTool<any>[]> {
	const tools: AgentTool<any>[] = [];
	for (const path of paths) {
		const url = path.startsWith("file:") ? path : pathToFileURL(path).href;
		const mod = (await import(url)) as { tools?: unknown; default?: unknown };
		const list = mod.tools ?? mod.default;
		if (!Array.isArray(list)) {
			throw new ConfigError(
				"WHEELHOUSE_TOOL_MODULES",
				`${path} must export \`tools\` (or a default export): an AgentTool[]`,
			);
		}
		tools.push(...(list as AgentTool<any>[]));
	}
	return tools;
}

/** `check()`'s value; a {@link ConfigError} it throws stops startup with its message. */
function orExit<T>(check: () => T): T {
	try {
		return check();
	} catch (err) {
		if (!(err instanceof ConfigError)) throw err;
		process.stderr.write(`${err.message}\n`);
		process.exit(1);
	}
}

async function main(): Promise<void> {
	const config = orExit(() => loadConfig(process.env));
	const webhooks = orExit(() => resolveWebhookSettings(config, process.env));
	// Cluster mode's settings are checked before the store opens: it opens differently in a cluster.
	const cluster = orExit(() => resolveClusterSettings(config));

	let store: SessionStore;
	// Where the store is, for messages: the file, or the PostgreSQL URL without its password.
	const where = config.store === "postgres" ? redactUrl(config.databaseUrl) : config.dbPath;
	const recoveredAt = Date.now();
	let interrupted: string[];
	// Said once the app's logger exists, so that every line on stdout is a log line.
	let storeNote: string | undefined;
	try {
		store = openStore({
			kind: config.store,
			path: config.dbPath,
			maxEventsPerSession: config.eventRetention,
			url: config.databaseUrl,
			schema: config.databaseSchema,
			poolSize: config.databasePoolSize,
			// One replica: the store takes the schema's instance-owner lock (a second process stops at startup).
			// A cluster (WHEELHOUSE_REDIS_URL): replicas share the schema, each session under a lease.
			cluster: cluster !== undefined,
			leaseTtlMs: config.leaseTtlMs,
		});
		if (store instanceof PostgresSessionStore) {
			await store.ready;
			storeNote = `PostgreSQL store at ${where}, schema "${store.schema}": ${store.cluster ? "one replica of a cluster" : "runs as one replica (instance-owner lock held)"}`;
		}
		// An interrupted A2A task's push notification goes in the same commit (push.ts).
		interrupted = await markInterruptedRuns(
			store,
			recoveredAt,
			webhooks && new WebhookEvents(webhooks),
			new A2aPushReporter(),
		);
	} catch (err) {
		process.stderr.write(`Cannot open the ${config.store} store at ${where}: ${(err as Error).message}\n`);
		process.exit(1);
	}

	// buildApp validates the config's `tools` section (and connects MCP servers): a ConfigError stops startup here too.
	const app = await buildApp({
		config,
		store,
		tools: await loadToolModules(config.toolModules),
		env: process.env,
	}).catch(async (err: unknown) => {
		if (!(err instanceof ConfigError)) throw err;
		process.stderr.write(`${err.message}\n`);
		await store.close();
		process.exit(1);
	});
	if (storeNote) app.log.info(storeNote);
	app.log.info({ config: redactConfig(config) }, "configuration");

	if (interrupted.length > 0) {
		// Tools registered and MCP servers connected: the runs may continue (and tools run again).
		await app.ready();
		const outcomes = await resumeAfterRestart(app.wheelhouse, interrupted, recoveredAt, app.log);
		const continued = outcomes.filter((o) => o.kind === "continued").length;
		app.log.info(
			{ interrupted: interrupted.length, continued },
			`${interrupted.length} run(s) were interrupted by the last stop; ${continued} continue by themselves (onInterrupt "continue"), the others wait for POST /continue`,
		);
	}

	let stopping = false;
	const stop = (signal: NodeJS.Signals) => {
		if (stopping) {
			app.log.warn(`${signal} again: exiting now`);
			process.exit(1);
		}
		stopping = true;
		app.log.info(`${signal}: shutting down (grace period ${config.shutdownGraceMs} ms)`);
		app
			.close()
			.then(async () => {
				await store.close();
				app.log.info("stopped");
				process.exit(0);
			})
			.catch((err: unknown) => {
				app.log.error({ err }, "shutdown failed");
				process.exit(1);
			});
	};
	process.on("SIGTERM", stop);
	process.on("SIGINT", stop);

	const listening = await listenAndAnnounce(app, { port: config.port, host: config.host });
	if (listening.kind === "failed") {
		app.log.error(listening.message);
		await app.close().catch(() => undefined);
		await store.close();
		process.exit(1);
	}
}

void main();
