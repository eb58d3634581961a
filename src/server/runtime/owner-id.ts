/**
 * The owner id of an API key: what the store keeps as a session's, a run's and a usage row's owner
 * (never the key itself). Auth gives it to each request; the per-key budgets of the config are keyed
 * by it; so it is the same function everywhere, and stable across restarts and replicas.
 */
import { createHash } from "node:crypto";

/** The first 16 hex digits of the key's SHA-256. */
export function ownerIdOf(apiKey: string): string {
	return createHash("sha256").update(apiKey).digest("hex").slice(0, 16);
}
