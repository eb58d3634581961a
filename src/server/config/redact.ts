/**
 * Secrets taken out of configuration before it is logged, found by structure rather than by a
 * list of paths (a list misses every section added after it was written):
 *
 * - every value under a `headers` object (models, HTTP tools, MCP servers: any header may carry a
 *   key, and header names are free-form);
 * - every value under an `env` object (the environment handed to an MCP stdio server);
 * - every value of a field whose name ends in a credential word: `apiKey(s)`, `providerKeys`,
 *   `token`, `secret`, `password`, `authorization`, `credentials`, `cookie`... (by the last word
 *   of the camelCase or snake_case name, so `maxTokens` and `apiKeyEnv` — the name of a
 *   variable, not its value — stay visible);
 * - the password of a URL (`https://user:pass@host`) and URL query parameters with such names
 *   (`redactUrl` of ai/redact-url.ts, the one judge of what in a URL is a secret).
 *
 * A secret is text: a number or a boolean under such a name is a setting about credentials
 * (`maxRunsPerKey: 2`), never one, and is kept. Field names, array lengths and every other value
 * are kept, so the log still shows what is configured.
 */

import { isCredentialName, redactUrl } from "../../ai/redact-url.js";

/** What a secret is replaced with. */
export const REDACTED = "[redacted]";

/** Objects whose every value is a secret, whatever the names of their fields. */
const SECRET_MAPS = new Set(["headers", "env"]);

/** A copy of `value` with every secret (see the file comment) replaced by {@link REDACTED}. */
export function redactSecrets(value: unknown): unknown {
	return redactValue(value, false);
}

function redactValue(value: unknown, secret: boolean): unknown {
	if (Array.isArray(value)) return value.map((item) => redactValue(item, secret));
	if (value !== null && typeof value === "object") {
		const out: Record<string, unknown> = {};
		for (const [key, item] of Object.entries(value)) {
			out[key] = redactValue(item, secret || SECRET_MAPS.has(key) || isCredentialName(key));
		}
		return out;
	}
	// An empty string holds nothing: shown, it says the secret is not set.
	if (secret) return typeof value === "string" && value !== "" ? REDACTED : value;
	return typeof value === "string" ? redactUrl(value) : value;
}
