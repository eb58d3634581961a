/**
 * URLs fit for logs and messages: the one place that decides what of a URL is a secret, used by
 * every layer that prints one (the config log, the store's and Redis's connection errors, webhook
 * delivery logs). It lives in the lowest layer so the store may use it too.
 *
 * A secret is the password of the userinfo (`https://user:pass@host`) and the value of a query
 * parameter whose name ends in a credential word (`token`, `key`, `secret`, `signature`...; see
 * {@link isCredentialName}). A bare URL keeps less: scheme, host, port and path only.
 */

/** Last words of a field or parameter name that mark its value as a credential. */
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

/**
 * True when the field `name` holds a credential, judged by the last word of its camelCase or
 * snake_case name (so `maxTokens` and `apiKeyEnv` — the name of a variable, not its value — are not).
 */
export function isCredentialName(name: string): boolean {
	const words = name
		.replace(/([a-z0-9])([A-Z])/g, "$1 $2")
		.split(/[\s_\-.]+/)
		.filter(Boolean);
	const last = words.at(-1)?.toLowerCase();
	return last !== undefined && CREDENTIAL_WORDS.has(last);
}

/** What replaces a secret inside a URL (it must survive URL encoding unchanged). */
const URL_REDACTED = "redacted";

/** What a text that starts like a URL but does not parse is shown as (it may hold a password). */
export const UNPARSABLE_URL = "[unparsable URL]";

export interface RedactUrlOptions {
	/**
	 * Keep only the scheme, host, port and path: no userinfo, query or fragment. For URLs logged
	 * again and again (webhook deliveries), where none of that helps. Default false: the username,
	 * the query and the fragment stay, with the password and credential-named parameters replaced.
	 */
	bare?: boolean;
}

/**
 * `text` with the secrets of its URL replaced (see the file comment). A text that does not start
 * with `scheme://` is returned as it is; one that does but does not parse becomes
 * {@link UNPARSABLE_URL}.
 */
export function redactUrl(text: string, options: RedactUrlOptions = {}): string {
	if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text;
	let url: URL;
	try {
		url = new URL(text);
	} catch {
		return UNPARSABLE_URL;
	}
	if (options.bare) {
		url.username = "";
		url.password = "";
		url.search = "";
		url.hash = "";
		return url.toString();
	}
	let changed = false;
	if (url.password) {
		url.password = URL_REDACTED;
		changed = true;
	}
	for (const name of [...url.searchParams.keys()]) {
		if (isCredentialName(name)) {
			url.searchParams.set(name, URL_REDACTED);
			changed = true;
		}
	}
	return changed ? url.toString() : text;
}
