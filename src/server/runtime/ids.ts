/**
 * Ids of sessions and runs: time-ordered (UUID version 7, RFC 9562: 48 bits of Unix milliseconds,
 * then 74 random bits), so the ids of new sessions and runs sort after the older ones. The SQLite
 * store keys its indexes by them: random ids put each new run's index entries on a different page,
 * time-ordered ones put concurrent runs' entries on the same few last pages (fewer pages per commit
 * and per checkpoint). The random part keeps them unguessable; they reveal their creation time,
 * which the session's `createdAt` shows its owner anyway.
 */
import { createHash, randomUUID } from "node:crypto";

/**
 * A UUIDv7 in the canonical 8-4-4-4-12 form. Its 74 random bits are those of a random UUID
 * (version 4) at the same places: `randomUUID` draws from a pool it refills in batches, where a
 * draw of 16 fresh random bytes per id is a call into the system's generator per session and per
 * run. Version 4 has the RFC 9562 variant already, and only its version digit differs.
 */
function uuidv7(now: number): string {
	const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx
	const ms = now.toString(16).padStart(12, "0");
	return `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7${random.slice(15)}`;
}

/** A run id: a UUIDv7 in the canonical 8-4-4-4-12 form. */
export function newRunId(now = Date.now()): string {
	return uuidv7(now);
}

/** A session id: `ses_` and a UUIDv7's 32 hex digits. */
export function newSessionId(now = Date.now()): string {
	return `ses_${uuidv7(now).replaceAll("-", "")}`;
}

const SESSION_ID = /^ses_[0-9a-f]{32}$/;

/**
 * The session a facade keeps for a conversation id of its own (an AG-UI thread, an A2A context)
 * of an owner. A session id names that session itself (`creatable: false`: it is never created
 * under that id); any other id is hashed with the facade's name and the owner, so the mapping
 * needs no storage and two owners never share a session.
 */
export function facadeSessionId(
	facade: string,
	ownerId: string | null,
	conversationId: string,
): { id: string; creatable: boolean } {
	if (SESSION_ID.test(conversationId)) return { id: conversationId, creatable: false };
	const hash = createHash("sha256")
		.update(`${facade}\0${ownerId ?? ""}\0${conversationId}`)
		.digest("hex");
	return { id: `ses_${hash.slice(0, 32)}`, creatable: true };
}
