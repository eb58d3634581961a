/**
 * Quoting a client's value in an error message: at most a few hundred characters of it, so a bad
 * megabyte-long value does not come back whole.
 */

/** How much of a value an error message quotes. */
const MAX_QUOTED = 200;

/** `value` as JSON, cut to {@link MAX_QUOTED} characters (saying how long it was when cut). */
export function quote(value: unknown): string {
	const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
	if (text.length <= MAX_QUOTED) return text;
	return `${text.slice(0, MAX_QUOTED)}… (${text.length} characters)`;
}
