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
 * - the password of a URL (`https://user:pass@host`) and URL query parameters with such names.
 *
 * A secret is text: a number or a boolean under such a name is a setting about credentials
 * (`maxRunsPerKey: 2`), never one, and is kept. Field names, array lengths and every other value
 * are kept, so the log still shows what is configured.
 */

/** What a secret is replaced with. */
export const REDACTED = "[redacted]";

/** Last words of a field name that mark its value as a credential. */
const CREDENTIAL_WORDS = new Set([
	"key",
	"keys",
	"apikey",
	"apikeys",
	"token",
	"secret",
	"secrets",
	"password",
	"passwd",
	"passphrase",
	"authorization",
	"auth",
	"credential",
	"credentials",
	"cookie",
	"cookies",
	"signature",
]);

/** Objects whose every value is a secret, whatever the names of their fields. */
const SECRET_MAPS = new Set(["headers", "env"]);

/** True when the field `name` holds a credential (judged by its last word). */
export function isCredentialName(name: string): boolean {
	const words = name
		.replace(/([a-z0-9])([A-Z])/g, "$1 $2")
		.split(/[\s_\-.]+/)
		.filter(Boolean);
	const last = words.at(-1)?.toLowerCase();
	return last !== undefined && CREDENTIAL_WORDS.has(last);
}

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

/** The password and the credential-named query parameters of a URL; other strings unchanged. */
function redactUrl(text: string): string {
	if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text;
	let url: URL;
	try {
		url = new URL(text);
	} catch {
		return text;
	}
	let changed = false;
	if (url.password) {
		url.password = "redacted";
		changed = true;
	}
	for (const name of [...url.searchParams.keys()]) {
		if (isCredentialName(name)) {
			url.searchParams.set(name, "redacted");
			changed = true;
		}
	}
	return changed ? url.toString() : text;
}
