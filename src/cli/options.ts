/** The command line's shared options: which server, which key, and the client they make. */
import { WheelhouseClient } from "../client/index.js";

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
