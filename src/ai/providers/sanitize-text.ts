/**
 * Replaces unpaired UTF-16 surrogates (from a string cut mid-emoji) with U+FFFD: JSON.stringify
 * escapes them as `\udXXX`, which the providers reject as invalid UTF-8.
 */
export function sanitizeText(text: string): string {
	return LONE_SURROGATE.test(text) ? text.replace(LONE_SURROGATE_G, "\uFFFD") : text;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATE_G = new RegExp(LONE_SURROGATE.source, "g");
