/** The command line's shared options: which server, which key, and the client they make. */
import { WheelhouseClient, WheelhouseError } from "../client/index.js";

/** Options every command takes (flags win over the environment). */
export interface ConnectionFlags {
	url?: string;
	"api-key"?: string;
}

/** The `node:util` parseArgs spec of {@link ConnectionFlags}. */
export const CONNECTION_OPTIONS = {
	url: { type: "string", short: "u" },
	"api-key": { type: "string", short: "k" },
	help: { type: "boolean", short: "h" },
} as const;

export const DEFAULT_URL = "http://localhost:3000";

/** The server URL and key from flags, else `WHEELHOUSE_URL` / `WHEELHOUSE_API_KEY`, else localhost without a key. */
export function connect(flags: ConnectionFlags, env: NodeJS.ProcessEnv): WheelhouseClient {
	const baseUrl = flags.url ?? env.WHEELHOUSE_URL ?? DEFAULT_URL;
	try {
		new URL(baseUrl);
	} catch {
		throw new UsageError(`--url: not a URL: ${baseUrl} (e.g. http://localhost:3000)`);
	}
	const apiKey = flags["api-key"] ?? env.WHEELHOUSE_API_KEY;
	return new WheelhouseClient({ baseUrl, apiKey: apiKey || undefined });
}

/** Bad command-line input: printed with the usage, exit code 64. */
export class UsageError extends Error {
	override name = "UsageError";
}

/** Exit codes of the commands, as docs/cli.md lists them. */
export const EXIT = {
	/** The run completed. */
	ok: 0,
	/** The run ended with an error (the model or a tool failed it). */
	failed: 1,
	/** The run was aborted. */
	aborted: 2,
	/** The server process running it died and the run was not continued. */
	interrupted: 3,
	/** The server refused a request or could not be reached. */
	request: 4,
	/** Bad command-line input. */
	usage: 64,
} as const;

/**
 * A refused request as the command line says it: the server's code and message, and for a 401
 * where the key goes (the server's own text speaks of HTTP headers).
 */
export function describeError(error: WheelhouseError): string {
	const said = `${error.code ?? `HTTP ${error.status}`}: ${error.message}`;
	if (error.status !== 401) return said;
	return `${said} Give the server's API key with --api-key <key> or WHEELHOUSE_API_KEY.`;
}

/** Network errors that mean no server answers at the address. */
const UNREACHABLE = new Set([
	"ECONNREFUSED",
	"ENOTFOUND",
	"EHOSTUNREACH",
	"ENETUNREACH",
	"ECONNRESET",
	"ETIMEDOUT",
	"EAI_AGAIN",
]);

/**
 * Any failure of a command as one line: a refused request as {@link describeError} says it, a
 * server that cannot be reached with where it was looked for and how to point elsewhere.
 */
export function describeFailure(error: unknown, baseUrl: string): string {
	if (error instanceof WheelhouseError) return describeError(error);
	const cause = (error as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } }).cause;
	const code = cause?.code ?? cause?.errors?.find((e) => e.code)?.code;
	if (code && UNREACHABLE.has(code)) {
		return `cannot reach a server at ${baseUrl} (${code}): start one (npm start), or give its address with --url or WHEELHOUSE_URL`;
	}
	const why = code ?? cause?.message;
	return `${(error as Error)?.message ?? String(error)}${why ? ` (${why})` : ""}`;
}
