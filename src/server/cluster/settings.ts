/**
 * Cluster mode's settings: whether it is on (`WHEELHOUSE_REDIS_URL`), the Redis URL checked at
 * startup, the channel prefix, and this process's replica id. A bad value stops startup naming
 * the variable, like every other setting.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { ConfigError, type ServerConfig } from "../config/config.js";

export interface ClusterSettings {
	redisUrl: string;
	/** Prefix of every channel name (`WHEELHOUSE_REDIS_PREFIX`). */
	prefix: string;
	/** This process: unique per start, so a restarted replica is a new holder of nothing. */
	replicaId: string;
}

/** A new replica id: the host, the pid, and random bits (pids repeat across containers). */
export function newReplicaId(): string {
	return `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

/**
 * The cluster settings of `config`, or undefined when cluster mode is off (no Redis URL).
 * Throws {@link ConfigError} for a URL that is not `redis://`/`rediss://`, or a store other than
 * PostgreSQL (the leases and fenced writes live in the database every replica shares).
 */
export function resolveClusterSettings(config: ServerConfig): ClusterSettings | undefined {
	const raw = config.redisUrl.trim();
	if (raw === "") return undefined;
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		throw new ConfigError("WHEELHOUSE_REDIS_URL", `not a URL; write it as redis://host:6379 (got "${raw}")`);
	}
	if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
		throw new ConfigError(
			"WHEELHOUSE_REDIS_URL",
			`must start with redis:// or rediss:// (got "${url.protocol}//"), e.g. redis://127.0.0.1:6379`,
		);
	}
	if (url.hostname === "") throw new ConfigError("WHEELHOUSE_REDIS_URL", `names no host (got "${raw}")`);
	if ((config.store as string) !== "postgres") {
		throw new ConfigError(
			"WHEELHOUSE_STORE",
			`cluster mode (WHEELHOUSE_REDIS_URL is set) needs the store every replica shares: WHEELHOUSE_STORE=postgres with WHEELHOUSE_DATABASE_URL (got "${config.store}")`,
		);
	}
	return { redisUrl: raw, prefix: config.redisPrefix, replicaId: newReplicaId() };
}
