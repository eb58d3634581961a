/**
 * Which URLs of an identity provider the server accepts in its config: https, or plain http on this
 * machine only (a test or a provider beside the server). Plain HTTP elsewhere would let anyone on
 * the path swap the keys, read the codes or hand out tokens.
 */
import { ConfigError } from "./config-error.js";

const LOCAL_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Why `url` is refused, or undefined when it is accepted. */
export function insecureUrlReason(url: URL): string | undefined {
	if (url.protocol === "https:") return undefined;
	if (url.protocol === "http:" && LOCAL_HOST.test(url.hostname)) return undefined;
	return "must be an https:// URL (http:// only on this machine: localhost, 127.0.0.1, [::1])";
}

/** `text` as an accepted URL; throws {@link ConfigError} naming `field` otherwise. */
export function providerUrl(field: string, text: string): URL {
	let url: URL;
	try {
		url = new URL(text);
	} catch {
		throw new ConfigError(field, `is not a URL (got "${text}")`);
	}
	const reason = insecureUrlReason(url);
	if (reason) throw new ConfigError(field, `${reason}; got "${text}"`);
	return url;
}
