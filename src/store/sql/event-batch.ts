/**
 * The on-disk form of the SQL stores' event log (SQLite and PostgreSQL alike): one row per session
 * per flush, holding the events of consecutive ids `first_id..last_id` concatenated. One row per
 * batch instead of one per event is what makes persistence cheap enough for the SSE hot path (a row
 * insert costs as much as hundreds of string appends).
 *
 * Each event is framed as `<createdAt>,<type length>,<data length>:<type><data>`, lengths in
 * UTF-16 code units (JavaScript string length), so any `type` and `data` round-trip exactly,
 * line breaks included, with no escaping cost.
 *
 * Since schema v4 a batch may skip ids (the deltas of a streamed message are not written): a frame
 * with an empty type is a *skip* whose data is the number of ids to skip before the next event.
 * Event types are never empty, so no event frame reads as a skip.
 *
 * Since schema v5 an event's data may refer to transcript messages instead of repeating them: a
 * *ref frame* has a negative type length, and in its data `\u0001<seq>\u0002` stands for the JSON of
 * the session's message `seq` (a literal `\u0001` is written `\u0001\u0002`). The events that carry
 * whole messages (`message_end`, `turn_end`, `agent_end`, a prompt's `message_start`) repeat the
 * messages the transcript stores anyway, and such copies were most of a run's event data: the
 * bytes that held the SQLite store's events/s well below the memory store's (bench/sse/results.md).
 * Reading substitutes the messages back, so the data read is the data appended, byte for byte.
 */
import type { StoredEvent } from "../types.js";

/** The frame of one event; batches are plain concatenations of frames. */
export function encodeEvent(type: string, data: string, createdAt: number): string {
	return `${createdAt},${type.length},${data.length}:${type}${data}`;
}

/** A message the data of the next events may refer to: its transcript seq and its JSON. */
export interface RefTarget {
	seq: number;
	json: string;
}

/** Messages shorter than this are repeated: a reference would save little. */
const MIN_REF_LENGTH = 128;

/**
 * The frame of one event whose data may contain `targets` (exactly, as JSON substrings): a ref
 * frame when at least one is found, else a plain frame.
 */
export function encodeEventWithRefs(
	type: string,
	data: string,
	createdAt: number,
	targets: readonly RefTarget[],
): string {
	let encoded: string | undefined;
	for (let i = targets.length - 1; i >= 0; i--) {
		const target = targets[i] as RefTarget;
		const json = target.json;
		if (json.length < MIN_REF_LENGTH) continue;
		let at = (encoded ?? data).indexOf(json);
		if (at < 0) continue;
		// A message's JSON has no raw control characters, so it never matches across a marker.
		if (encoded === undefined) {
			encoded = data.includes(REF_OPEN) ? data.split(REF_OPEN).join(LITERAL_OPEN) : data;
			if (encoded !== data) at = encoded.indexOf(json);
		}
		const marker = `${REF_OPEN}${target.seq}${REF_CLOSE}`;
		while (at >= 0) {
			encoded = encoded.slice(0, at) + marker + encoded.slice(at + json.length);
			at = encoded.indexOf(json, at + marker.length);
		}
	}
	return encoded === undefined ? encodeEvent(type, data, createdAt) : encodeRefFrame(type, encoded, createdAt);
}

/** A ref frame: `encoded` is the event's data with references (see the module comment). */
function encodeRefFrame(type: string, encoded: string, createdAt: number): string {
	return `${createdAt},-${type.length},${encoded.length}:${type}${encoded}`;
}

const REF_OPEN = "\u0001";
const REF_CLOSE = "\u0002";
const LITERAL_OPEN = REF_OPEN + REF_CLOSE;

/**
 * The data of a ref frame with the references `resolve` knows replaced by the messages' JSON.
 * `plain`: the event's data, when every reference was resolved; else undefined, and `encoded` is the
 * data still as a ref frame's, with the known references inlined. `id`: the event's id, for errors.
 */
function substituteRefs(
	data: string,
	resolve: (seq: number) => string | undefined,
	id: number | undefined,
): { plain: string | undefined; encoded: string } {
	let plain = "";
	let encoded = "";
	let kept = false;
	for (let at = 0; ; ) {
		const open = data.indexOf(REF_OPEN, at);
		if (open < 0) {
			plain += data.slice(at);
			encoded += data.slice(at);
			return { plain: kept ? undefined : plain, encoded };
		}
		const close = data.indexOf(REF_CLOSE, open + 1);
		if (close < 0) throw new Error(`malformed event batch ${place(id)}: unterminated message reference`);
		plain += data.slice(at, open);
		encoded += data.slice(at, open);
		if (close === open + 1) {
			plain += REF_OPEN;
			encoded += LITERAL_OPEN;
		} else {
			const seq = Number(data.slice(open + 1, close));
			if (!Number.isSafeInteger(seq) || seq < 0)
				throw new Error(`malformed event batch ${place(id)}: bad message reference`);
			const json = resolve(seq);
			if (json === undefined) {
				kept = true;
				encoded += data.slice(open, close + 1);
			} else {
				plain += json;
				encoded += json;
			}
		}
		at = close + 1;
	}
}

/** Where a malformed frame is, for the error: at the id of its event, or in a session's buffer. */
function place(id: number | undefined): string {
	return id === undefined ? "in the buffer" : `at id ${id}`;
}

/** One frame of a batch, read at `pos` (`id`: its event's id, for errors). */
function readFrame(text: string, pos: number, id: number | undefined) {
	const c1 = text.indexOf(",", pos);
	const c2 = text.indexOf(",", c1 + 1);
	const colon = text.indexOf(":", c2 + 1);
	if (c1 < 0 || c2 < 0 || colon < 0) throw new Error(`malformed event batch ${place(id)}: missing frame header`);
	const createdAt = Number(text.slice(pos, c1));
	const refs = text.charCodeAt(c1 + 1) === 45; // "-": a ref frame
	const typeLength = Number(text.slice(refs ? c1 + 2 : c1 + 1, c2));
	const dataLength = Number(text.slice(c2 + 1, colon));
	const dataStart = colon + 1 + typeLength;
	const end = dataStart + dataLength;
	if (
		!Number.isFinite(createdAt) ||
		!(typeLength >= 0) ||
		!(dataLength >= 0) ||
		end > text.length ||
		(refs && typeLength === 0)
	) {
		throw new Error(`malformed event batch ${place(id)}: bad frame header`);
	}
	return {
		createdAt,
		refs,
		/** A skip frame (its data is the number of ids to skip). */
		skip: typeLength === 0,
		type: text.slice(colon + 1, dataStart),
		data: text.slice(dataStart, end),
		end,
	};
}

/**
 * `text` (frames) with the references that `resolve` knows replaced by the messages' JSON: a ref
 * frame left without references becomes a plain frame. For events that referred to messages whose
 * write failed (they are not in the transcript, so the event has to carry them itself).
 */
export function inlineRefs(text: string, resolve: (seq: number) => string | undefined): string {
	let out = "";
	for (let pos = 0; pos < text.length; ) {
		const frame = readFrame(text, pos, undefined);
		if (frame.refs) {
			const { plain, encoded } = substituteRefs(frame.data, resolve, undefined);
			out +=
				plain === undefined
					? encodeRefFrame(frame.type, encoded, frame.createdAt)
					: encodeEvent(frame.type, plain, frame.createdAt);
		} else out += text.slice(pos, frame.end);
		pos = frame.end;
	}
	return out;
}

/** A skip frame: the next event's id is `count` higher than it would be. */
export function encodeSkip(count: number, createdAt: number): string {
	const n = String(count);
	return `${createdAt},0,${n.length}:${n}`;
}

/**
 * Decodes a batch whose first event has id `firstId`, calling `visit` per event in order until it
 * returns false; `resolve` gives the JSON of a referenced transcript message. Throws on a malformed
 * batch (a database written by something else).
 */
export function decodeBatch(
	firstId: number,
	text: string,
	visit: (event: StoredEvent) => boolean,
	resolve: (seq: number) => string | undefined = () => undefined,
): void {
	let id = firstId;
	for (let pos = 0; pos < text.length; ) {
		const frame = readFrame(text, pos, id);
		pos = frame.end;
		if (frame.skip) {
			const skip = Number(frame.data);
			if (!Number.isSafeInteger(skip) || skip < 1) throw new Error(`malformed event batch at id ${id}: bad skip frame`);
			id += skip;
			continue;
		}
		const data = frame.refs
			? (substituteRefs(frame.data, (seq) => resolve(seq) ?? "null", id).plain as string)
			: frame.data;
		if (!visit({ id, type: frame.type, data, createdAt: frame.createdAt })) return;
		id++;
	}
}
