/**
 * The size of a message as the memory limits count it: about its length as JSON, measured
 * without serialising it (a 4 MB message would otherwise be copied once more just to be counted).
 */

/** Bytes counted for each value besides its content: quotes, separators, a key's name. */
const OVERHEAD = 4;

/**
 * About the length of `value` as JSON, in bytes: strings count their UTF-16 length (equal to
 * their UTF-8 length for ASCII, which base64 images are), plus a few bytes per value and key.
 * Cycles cannot occur in messages; `depth` guards against them anyway.
 */
export function approximateJsonBytes(value: unknown, depth = 0): number {
	if (typeof value === "string") return value.length + 2;
	if (value === null || typeof value !== "object" || depth > 64) return OVERHEAD;
	let bytes = 2;
	if (Array.isArray(value)) {
		for (const item of value) bytes += approximateJsonBytes(item, depth + 1) + 1;
		return bytes;
	}
	for (const key in value) {
		bytes += key.length + OVERHEAD + approximateJsonBytes((value as Record<string, unknown>)[key], depth + 1);
	}
	return bytes;
}

/** {@link approximateJsonBytes} of several messages. */
export function approximateBytesOf(values: readonly unknown[]): number {
	let bytes = 0;
	for (const value of values) bytes += approximateJsonBytes(value);
	return bytes;
}
