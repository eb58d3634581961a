/**
 * The on-disk form of the SQLite event log: one row per session per flush, holding the events of
 * consecutive ids `first_id..last_id` concatenated. One row per batch instead of one per event is
 * what makes persistence cheap enough for the SSE hot path (a row insert costs as much as
 * hundreds of string appends).
 *
 * Each event is framed as `<createdAt>,<type length>,<data length>:<type><data>`, lengths in
 * UTF-16 code units (JavaScript string length), so any `type` and `data` round-trip exactly,
 * line breaks included, with no escaping cost.
 *
 * Since schema v4 a batch may skip ids (the deltas of a streamed message are not written): a frame
 * with an empty type is a *skip* whose data is the number of ids to skip before the next event.
 * Event types are never empty, so no event frame reads as a skip.
 */
import type { StoredEvent } from "./types.js";

/** The frame of one event; batches are plain concatenations of frames. */
export function encodeEvent(type: string, data: string, createdAt: number): string {
	return `${createdAt},${type.length},${data.length}:${type}${data}`;
}

/** A skip frame: the next event's id is `count` higher than it would be. */
export function encodeSkip(count: number, createdAt: number): string {
	const n = String(count);
	return `${createdAt},0,${n.length}:${n}`;
}

/**
 * Decodes a batch whose first event has id `firstId`, calling `visit` per event in order until it
 * returns false. Throws on a malformed batch (a database written by something else).
 */
export function decodeBatch(firstId: number, text: string, visit: (event: StoredEvent) => boolean): void {
	let pos = 0;
	let id = firstId;
	while (pos < text.length) {
		const c1 = text.indexOf(",", pos);
		const c2 = text.indexOf(",", c1 + 1);
		const colon = text.indexOf(":", c2 + 1);
		if (c1 < 0 || c2 < 0 || colon < 0) throw new Error(`malformed event batch at id ${id}: missing frame header`);
		const createdAt = Number(text.slice(pos, c1));
		const typeLength = Number(text.slice(c1 + 1, c2));
		const dataLength = Number(text.slice(c2 + 1, colon));
		const typeStart = colon + 1;
		const dataStart = typeStart + typeLength;
		const end = dataStart + dataLength;
		if (!Number.isFinite(createdAt) || !(typeLength >= 0) || !(dataLength >= 0) || end > text.length) {
			throw new Error(`malformed event batch at id ${id}: bad frame header`);
		}
		if (typeLength === 0) {
			const skip = Number(text.slice(dataStart, end));
			if (!Number.isSafeInteger(skip) || skip < 1) throw new Error(`malformed event batch at id ${id}: bad skip frame`);
			id += skip;
			pos = end;
			continue;
		}
		const keepGoing = visit({
			id,
			type: text.slice(typeStart, dataStart),
			data: text.slice(dataStart, end),
			createdAt,
		});
		if (!keepGoing) return;
		id++;
		pos = end;
	}
}
