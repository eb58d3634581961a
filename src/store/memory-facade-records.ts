/**
 * The in-memory store's facade records (`FacadeRecordStore` of types.ts): per session and kind in
 * put order, with an index by `(kind, key)` across sessions for `findFacadeRecords`. Lost with the
 * process like everything else of the memory store.
 */
import { findFacadeLimit, MAX_FACADE_RECORDS_PER_KIND } from "./shared.js";
import type { FacadeRecord } from "./types.js";

const indexKey = (kind: string, key: string) => `${kind}\u0000${key}`;

export class MemoryFacadeRecords {
	/** Session → kind → key → record and its put number, least recently put first (Map order). */
	private readonly bySession = new Map<string, Map<string, Map<string, { record: FacadeRecord; seq: number }>>>();
	private seq = 0;
	/** `(kind, key)` → the sessions that hold such a record. */
	private readonly index = new Map<string, Set<string>>();

	put(sessionId: string, records: readonly { kind: string; key: string; data: string }[], at: number): void {
		let kinds = this.bySession.get(sessionId);
		if (!kinds) {
			kinds = new Map();
			this.bySession.set(sessionId, kinds);
		}
		for (const { kind, key, data } of records) {
			let keys = kinds.get(kind);
			if (!keys) {
				keys = new Map();
				kinds.set(kind, keys);
			}
			keys.delete(key);
			keys.set(key, { record: { sessionId, kind, key, data, createdAt: at }, seq: ++this.seq });
			const sessions = this.index.get(indexKey(kind, key)) ?? new Set();
			sessions.add(sessionId);
			this.index.set(indexKey(kind, key), sessions);
			for (const old of keys.keys()) {
				if (keys.size <= MAX_FACADE_RECORDS_PER_KIND) break;
				keys.delete(old);
				this.unindex(kind, old, sessionId);
			}
		}
	}

	get(sessionId: string, kind: string, key: string): FacadeRecord | undefined {
		const entry = this.bySession.get(sessionId)?.get(kind)?.get(key);
		return entry && { ...entry.record };
	}

	/** The records of `(kind, key)` in the sessions `owns` accepts, most recently put first. */
	find(kind: string, key: string, owns: (sessionId: string) => boolean, limit?: number): FacadeRecord[] {
		const max = findFacadeLimit(limit);
		const found: { record: FacadeRecord; seq: number }[] = [];
		for (const sessionId of this.index.get(indexKey(kind, key)) ?? []) {
			const entry = owns(sessionId) ? this.bySession.get(sessionId)?.get(kind)?.get(key) : undefined;
			if (entry) found.push(entry);
		}
		return found
			.sort((a, b) => b.seq - a.seq)
			.slice(0, max)
			.map((entry) => ({ ...entry.record }));
	}

	/** Forgets a deleted session's records. */
	drop(sessionId: string): void {
		for (const [kind, keys] of this.bySession.get(sessionId) ?? []) {
			for (const key of keys.keys()) this.unindex(kind, key, sessionId);
		}
		this.bySession.delete(sessionId);
	}

	private unindex(kind: string, key: string, sessionId: string): void {
		const sessions = this.index.get(indexKey(kind, key));
		sessions?.delete(sessionId);
		if (sessions?.size === 0) this.index.delete(indexKey(kind, key));
	}
}
