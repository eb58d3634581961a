/** Idempotency keys for the calls that start or queue a run, so that a retry of one is safe. */

/**
 * A new random key (a UUID v4): one per logical request. `crypto.randomUUID` needs a secure
 * context in a browser, so the key is built from `getRandomValues`, which every context has.
 */
export function newIdempotencyKey(): string {
	const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
	bytes[6] = (bytes[6]! & 0x0f) | 0x40;
	bytes[8] = (bytes[8]! & 0x3f) | 0x80;
	const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
