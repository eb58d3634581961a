/**
 * The PostgreSQL store's connection URL: parsed and checked before anything connects, and shown
 * in messages without its password.
 */
import { redactUrl } from "../../ai/redact-url.js";

/** What the store connects with, from a `postgres://` or `postgresql://` URL. */
export interface DatabaseUrl {
	/** The URL as given (it may hold a password: never print it; print `redacted`). */
	url: string;
	/** The URL with its secrets replaced (`redactUrl`), for messages and logs. */
	redacted: string;
	host: string;
	port: number;
	database: string;
	user: string;
}

/**
 * Parses a PostgreSQL URL; a string error (naming what is wrong, never the password) when it is
 * not one. `field` names the setting in the message (e.g. `WHEELHOUSE_DATABASE_URL`).
 */
export function parseDatabaseUrl(url: string, field = "url"): DatabaseUrl | string {
	let u: URL;
	try {
		u = new URL(url);
	} catch {
		return `${field} is not a URL; expected postgres://user:password@host:5432/database`;
	}
	const redacted = redactUrl(url);
	if (u.protocol !== "postgres:" && u.protocol !== "postgresql:") {
		return `${field} must start with postgres:// or postgresql://; got ${u.protocol}//`;
	}
	if (u.hostname === "" && !u.searchParams.has("host")) {
		return `${field} has no host (${redacted}); expected postgres://user:password@host:5432/database`;
	}
	const port = u.port === "" ? 5432 : Number(u.port);
	if (!Number.isInteger(port) || port < 1 || port > 65535) return `${field} has an invalid port (${redacted})`;
	const database = decodeURIComponent(u.pathname.replace(/^\//, ""));
	if (database === "" || database.includes("/")) {
		return `${field} names no database (${redacted}); expected postgres://user:password@host:5432/database`;
	}
	return {
		url,
		redacted,
		host: u.hostname || (u.searchParams.get("host") ?? ""),
		port,
		database,
		user: decodeURIComponent(u.username),
	};
}

/** A schema name the store accepts: a plain lower-case SQL identifier (no quoting needed). */
export function checkSchemaName(schema: string, field = "schema"): string | undefined {
	if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
		return `${field} must be a lower-case SQL identifier (letters, digits, _; at most 63); got ${JSON.stringify(schema)}`;
	}
	return undefined;
}
