/**
 * deploy/docker-compose.yml and deploy/nginx.conf, without a Docker engine: the compose file
 * parses and has the cluster's topology (PostgreSQL, Redis, three replicas from the repository's
 * Dockerfile, nginx in front with deploy/nginx.conf), each part waits for what it needs and is
 * checked on /readyz, nginx's upstream is the replicas, and nginx's settings agree with the
 * server's (body limit, a read timeout above the heartbeat). The replicas' healthcheck command
 * itself runs against the real server process.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CONFIG_VARS, loadConfig } from "../../src/server/config/config.js";
import { repoRoot, startMain, stopAll } from "../helpers/main-process.js";

const deployDir = path.join(repoRoot, "deploy");
const compose = parse(readFileSync(path.join(deployDir, "docker-compose.yml"), "utf8"), { merge: true }) as {
	services: Record<string, any>;
	networks: Record<string, any>;
	volumes?: Record<string, unknown>;
};
const nginxConf = readFileSync(path.join(deployDir, "nginx.conf"), "utf8");
const replicas = ["wheelhouse-1", "wheelhouse-2", "wheelhouse-3"];

const dirs: string[] = [];
afterEach(() => {
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Every value of an nginx directive (outside comments), e.g. `directive("listen")` → ["8080"]. */
function directive(name: string, text = nginxConf): string[] {
	const uncommented = text.replace(/#[^\n]*/g, "");
	return [...uncommented.matchAll(new RegExp(`(?:^|[;{}\\s])${name}\\s+([^;{]*);`, "g"))].map((m) => m[1]!.trim());
}

/** nginx's size syntax (`4m`, `512k`, `100`) in bytes. */
function bytes(size: string): number {
	const m = /^(\d+)([kKmMgG]?)$/.exec(size);
	if (!m) throw new Error(`not an nginx size: ${size}`);
	const unit = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as "" | "k" | "m" | "g"];
	return Number(m[1]) * unit;
}

/** nginx's time syntax (`60s`, `5m`, `300`) in milliseconds. */
function millis(time: string): number {
	const m = /^(\d+)(ms|s|m|h)?$/.exec(time);
	if (!m) throw new Error(`not an nginx time: ${time}`);
	return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
}

const configDefault = (env: string) => CONFIG_VARS.find((v) => v.env === env)!.default;

/**
 * Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR:?message}` from `env`
 * (`:?` throws with its message when the variable is unset or empty, as compose refuses to start).
 */
function interpolate(value: string, env: Record<string, string>): string {
	return value.replace(/\$\{(\w+)(?:(:-|:\?)([^}]*))?\}/g, (_, name: string, op: string | undefined, arg: string) => {
		const set = env[name];
		if (set !== undefined && set !== "") return set;
		if (op === ":?") throw new Error(`compose: ${name}: ${arg}`);
		return op === ":-" ? arg : "";
	});
}

/** The runtime stage's ENV lines (its last stage), as `docker run` starts the image. */
function imageEnv(): Record<string, string> {
	const dockerfile = readFileSync(path.join(repoRoot, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
	const lastStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
	const env: Record<string, string> = {};
	for (const line of lastStage.split("\n").filter((l) => l.trim().startsWith("ENV "))) {
		for (const [, key, value] of line.matchAll(/(\w+)=(\S+)/g))
			env[key!] = value!.replace(/\$\{PORT\}/, String(imagePort()));
	}
	return env;
}

/** The runtime stage's PORT (ENV PORT=${PORT} with ARG PORT=...). */
function imagePort(): number {
	const dockerfile = readFileSync(path.join(repoRoot, "Dockerfile"), "utf8");
	return Number(/^ARG PORT=(\d+)/m.exec(dockerfile)![1]);
}

describe("deploy/docker-compose.yml", () => {
	it("runs PostgreSQL, Redis, three replicas and nginx", () => {
		expect(Object.keys(compose.services).sort()).toEqual(["nginx", "postgres", "redis", ...replicas].sort());
		expect(compose.services.postgres.image).toMatch(/^postgres:\d+/);
		expect(compose.services.redis.image).toMatch(/^redis:\d+/);
		expect(compose.services.nginx.image).toMatch(/^nginx:/);
		// PostgreSQL keeps its data on a named volume.
		const pgVolume = (compose.services.postgres.volumes as string[]).find((v) =>
			v.endsWith(":/var/lib/postgresql/data"),
		);
		expect(pgVolume).toBeDefined();
		expect(compose.volumes).toHaveProperty(pgVolume!.split(":")[0]!);
	});

	it("builds every replica from the repository's Dockerfile, with the same settings", () => {
		for (const name of replicas) {
			const service = compose.services[name];
			const context = path.resolve(deployDir, service.build.context);
			expect(context).toBe(repoRoot);
			expect(existsSync(path.join(context, service.build.dockerfile))).toBe(true);
			expect(service.environment).toEqual(compose.services["wheelhouse-1"].environment);
			expect(service.image).toBe(compose.services["wheelhouse-1"].image);
		}
	});

	it("points every replica at the PostgreSQL store and the Redis service, and requires API keys", () => {
		const { postgres } = compose.services;
		for (const name of replicas) {
			const env = compose.services[name].environment as Record<string, string>;
			expect(env.WHEELHOUSE_STORE).toBe("postgres");
			const db = new URL(env.WHEELHOUSE_DATABASE_URL!.replace(/\$\{(\w+):-([^}]*)\}/g, "$2"));
			expect(db.protocol).toBe("postgres:");
			expect(db.hostname).toBe("postgres");
			expect(db.username).toBe(postgres.environment.POSTGRES_USER);
			expect(db.pathname).toBe(`/${postgres.environment.POSTGRES_DB}`);
			// Both passwords come from the same variable with the same default.
			expect(decodeURIComponent(db.password)).toBe(
				postgres.environment.POSTGRES_PASSWORD.replace(/\$\{(\w+):-([^}]*)\}/, "$2"),
			);
			const redis = new URL(env.WHEELHOUSE_REDIS_URL!);
			expect(redis.protocol).toBe("redis:");
			expect(redis.hostname).toBe("redis");
			// `${VAR:?message}`: compose refuses to start without keys.
			expect(env.WHEELHOUSE_API_KEYS).toMatch(/^\$\{WHEELHOUSE_API_KEYS:\?.+\}$/);
		}
	});

	it("gives every replica an environment the server accepts: PostgreSQL store, cluster mode, the keys given", () => {
		const given = { WHEELHOUSE_API_KEYS: "k".repeat(32), OPENAI_API_KEY: "sk-test" };
		const raw = compose.services["wheelhouse-1"].environment as Record<string, string>;
		for (const name of Object.keys(raw).filter((n) => n.startsWith("WHEELHOUSE_"))) {
			expect(
				CONFIG_VARS.map((v) => v.env),
				`${name} is a server variable`,
			).toContain(name);
		}
		const env = Object.fromEntries(
			Object.entries(raw).map(([name, value]) => [name, interpolate(String(value), given)]),
		);
		const config = loadConfig({ ...imageEnv(), ...env });
		expect(config.store).toBe("postgres");
		expect(config.databaseUrl).toBe("postgres://wheelhouse:wheelhouse@postgres:5432/wheelhouse");
		expect(config.redisUrl).toBe("redis://redis:6379");
		expect(config.apiKeys).toEqual([given.WHEELHOUSE_API_KEYS]);
		expect(config.providerKeys).toEqual({ openai: "sk-test" });
		expect(config.host).toBe("0.0.0.0");
		// Without keys compose refuses to start, naming the variable.
		expect(() => interpolate(raw.WHEELHOUSE_API_KEYS!, {})).toThrow(/WHEELHOUSE_API_KEYS/);
	});

	it("starts each part once what it needs is healthy, and checks replicas on /readyz", () => {
		for (const name of replicas) {
			const service = compose.services[name];
			expect(service.depends_on).toEqual({
				postgres: { condition: "service_healthy" },
				redis: { condition: "service_healthy" },
			});
			expect(service.healthcheck.test.join(" ")).toContain("/readyz");
			expect(millis(service.stop_grace_period)).toBeGreaterThan(
				Number(service.environment.WHEELHOUSE_SHUTDOWN_GRACE_MS) +
					Number(configDefault("WHEELHOUSE_SHUTDOWN_DELAY_MS")),
			);
		}
		expect(compose.services.postgres.healthcheck.test.join(" ")).toContain("pg_isready");
		expect(compose.services.redis.healthcheck.test).toEqual(["CMD", "redis-cli", "ping"]);
		expect(compose.services.nginx.depends_on).toEqual(
			Object.fromEntries(replicas.map((name) => [name, { condition: "service_healthy" }])),
		);
		expect(compose.services.nginx.healthcheck.test.join(" ")).toContain("/readyz");
	});

	it("mounts deploy/nginx.conf as nginx's configuration and publishes the port it listens on", () => {
		const mount = (compose.services.nginx.volumes as string[]).find((v) => v.includes(":/etc/nginx/nginx.conf"));
		expect(mount).toBeDefined();
		const [source, , mode] = mount!.split(":");
		expect(path.resolve(deployDir, source!)).toBe(path.join(deployDir, "nginx.conf"));
		expect(mode).toBe("ro");
		const [listen] = directive("listen");
		expect(compose.services.nginx.ports).toEqual([`${listen}:${listen}`]);
	});

	it("gives the replicas the fixed addresses nginx's upstream names, on the image's port", () => {
		const subnet = compose.networks.wheelhouse.ipam.config[0].subnet as string;
		const prefix = subnet.replace(/\.0\/24$/, ".");
		const addresses = replicas.map((name) => compose.services[name].networks.wheelhouse.ipv4_address as string);
		for (const address of addresses) expect(address.startsWith(prefix)).toBe(true);
		expect(new Set(addresses).size).toBe(3);
		const blocks = [...nginxConf.matchAll(/upstream\s+(\w+)\s*\{([\s\S]*?)\n\s*\}/g)];
		expect(blocks.map((b) => b[1])).toEqual(["wheelhouse", "wheelhouse_fresh"]);
		for (const [, , body] of blocks) {
			const servers = directive("server", body).map((s) => s.split(/\s+/)[0]);
			expect(servers).toEqual(addresses.map((address) => `${address}:${imagePort()}`));
		}
		for (const name of ["postgres", "redis", "nginx"]) expect(compose.services[name].networks).toEqual(["wheelhouse"]);
	});
});

describe("deploy/nginx.conf agrees with the server", () => {
	it("takes bodies up to the server's default limit", () => {
		expect(directive("client_max_body_size").map(bytes)).toEqual([Number(configDefault("WHEELHOUSE_BODY_LIMIT"))]);
	});

	it("waits longer than the heartbeat interval between two reads, and never buffers or compresses events", () => {
		const [readTimeout] = directive("proxy_read_timeout");
		expect(millis(readTimeout!)).toBeGreaterThan(2 * Number(configDefault("WHEELHOUSE_HEARTBEAT_MS")));
		expect(directive("proxy_buffering")).toEqual(["off"]);
		expect(directive("proxy_cache")).toEqual(["off"]);
		expect(directive("gzip_types").join(" ")).not.toContain("event-stream");
		// X-Accel-Buffering from the server is honoured (nginx would drop it if told to ignore it).
		expect(directive("proxy_ignore_headers")).toEqual([]);
	});

	it("talks HTTP/1.1 with keepalive to the replicas and passes the resume and request-id headers", () => {
		expect(directive("proxy_http_version")).toEqual(["1.1"]);
		expect(directive("proxy_set_header")).toEqual(
			expect.arrayContaining([
				'Connection ""',
				"X-Request-Id $wheelhouse_request_id",
				"Last-Event-ID $http_last_event_id",
			]),
		);
		const upstream = /upstream\s+wheelhouse\s*\{([\s\S]*?)\n\s*\}/.exec(nginxConf)![1]!;
		expect(Number(directive("keepalive", upstream)[0])).toBeGreaterThan(0);
		// Closed by nginx before the server's keep-alive timeout (Fastify's default, 72 s).
		expect(millis(directive("keepalive_timeout", upstream)[0]!)).toBeLessThan(72_000);
		// GET and HEAD over kept-alive connections; requests that change something over new ones.
		expect(directive("proxy_pass")).toEqual(["http://$wheelhouse_upstream"]);
		const map = /map\s+\$request_method\s+\$wheelhouse_upstream\s*\{([\s\S]*?)\}/.exec(nginxConf)![1]!;
		expect(
			map
				.replace(/#[^\n]*/g, "")
				.trim()
				.split(/\s*;\s*/)
				.filter(Boolean),
		).toEqual(["GET wheelhouse", "HEAD wheelhouse", "default wheelhouse_fresh"]);
		const fresh = /upstream\s+wheelhouse_fresh\s*\{([\s\S]*?)\n\s*\}/.exec(nginxConf)![1]!;
		expect(directive("keepalive", fresh)).toEqual([]);
	});

	it("leaves daemon, pid and user to the command line and the image", () => {
		for (const name of ["daemon", "pid", "user"]) expect(directive(name)).toEqual([]);
	});
});

describe("the replicas' healthcheck command", () => {
	/** Runs the compose healthcheck's CMD as Docker would inside the container (PORT from its env). */
	async function healthcheck(port: number): Promise<number | null> {
		const [kind, command, ...args] = compose.services["wheelhouse-1"].healthcheck.test as string[];
		expect(kind).toBe("CMD");
		const child = spawn(command === "node" ? process.execPath : command!, args, {
			env: { PATH: process.env.PATH, PORT: String(port) },
		});
		const [code] = await once(child, "exit");
		return code as number | null;
	}

	it("passes on a ready replica and fails on one that is stopping", async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wh-compose-hc-"));
		dirs.push(dir);
		const main = await startMain({ db: path.join(dir, "wh.db"), env: { WHEELHOUSE_SHUTDOWN_DELAY_MS: "5000" } });
		expect(await healthcheck(main.port)).toBe(0);
		// Stopping: /readyz answers 503 while the server still accepts connections.
		main.child.kill("SIGTERM");
		const deadline = Date.now() + 3000;
		while ((await fetch(`${main.url}/readyz`)).status !== 503 && Date.now() < deadline) {
			await new Promise((resolve) => setTimeout(resolve, 20));
		}
		expect((await fetch(`${main.url}/healthz`)).status).toBe(200);
		expect(await healthcheck(main.port)).toBe(1);
	}, 60_000);
});
