/**
 * Ids of sessions and runs: time-ordered (UUID version 7, RFC 9562: 48 bits of Unix milliseconds,
 * then 74 random bits), so the ids of new sessions and runs sort after the older ones. The SQLite
 * store keys its indexes by them: random ids put each new run's index entries on a different page,
 * time-ordered ones put concurrent runs' entries on the same few last pages (fewer pages per commit
 * and per checkpoint). The random part keeps them unguessable; they reveal their creation time,
 * which the session's `createdAt` shows its owner anyway.
 */
import { createHash, getRandomValues } from "node:crypto";

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** A UUIDv7's 16 bytes as 32 lowercase hex digits. */
function uuidv7Hex(now: number): string {
	const bytes = getRandomValues(new Uint8Array(16));
	let ms = now;
	for (let i = 5; i >= 0; i--) {
		bytes[i] = ms % 256;
		ms = Math.floor(ms / 256);
	}
	bytes[6] = ((bytes[6] as number) & 0x0f) | 0x70; // version 7
	bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80; // RFC 9562 variant
	let hex = "";
	for (const b of bytes) hex += HEX[b];
	return hex;
}

/** A run id: a UUIDv7 in the canonical 8-4-4-4-12 form. */
export function newRunId(now = Date.now()): string {
	const h = uuidv7Hex(now);
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A session id: `ses_` and a UUIDv7's 32 hex digits. */
export function newSessionId(now = Date.now()): string {
	return `ses_${uuidv7Hex(now)}`;
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
