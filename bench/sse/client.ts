/**
 * The measuring client of bench/sse: a separate process (forked by index.ts) so the server under
 * test has its own core. It receives one job over IPC, opens every stream of the job at once with
 * node:http, and reports bytes, events, text deltas and timings per stream.
 *
 * Frames are counted by scanning the bytes (a `\ndata: ` per event, `"type":"text_delta"` per
 * delta) rather than parsed, so the client costs the same for every server and stays far from
 * being the bottleneck (see runStream).
 */
import { connect } from "node:net";
import { performance } from "node:perf_hooks";

export interface StreamRequest {
	method: "GET" | "POST";
	/** With `create`, `{id}` in it is replaced by the id the create request answered. */
	url: string;
	headers?: Record<string, string>;
	body?: string;
	/**
	 * A JSON POST made first, on its own connection (its time counts in the stream's): the session
	 * the stream is for, created by the client as a real one would (`{"id": ...}` answered).
	 */
	create?: { url: string; body: string };
}

export interface ClientJob {
	requests: StreamRequest[];
	/** Return the body of the first stream (to record it for the raw writer). */
	record?: boolean;
	/**
	 * What marks one text delta in the stream, counted in the bytes (default `"type":"text_delta"`, the
	 * native events'; other protocols, e.g. bench/facades, have their own). At most 32 characters.
	 */
	deltaNeedle?: string;
}

export interface StreamStats {
	bytes: number;
	events: number;
	textDeltas: number;
	/** ms from the job start to the first text delta of this stream. */
	firstDeltaMs: number;
	/** ms from the job start to the end of this stream. */
	endMs: number;
	status: number;
}

export interface ClientResult {
	wallMs: number;
	streams: StreamStats[];
	recorded?: string;
	error?: string;
}

const EVENT = "\ndata: ";
const DELTA = '"type":"text_delta"';
const TAIL = 32;

function countNew(text: string, needle: string, tailLength: number): number {
	let count = 0;
	let from = 0;
	for (;;) {
		const at = text.indexOf(needle, from);
		if (at < 0) return count;
		// Matches wholly inside the carried-over tail were counted with the previous chunk.
		if (at + needle.length > tailLength) count++;
		from = at + 1;
	}
}

/**
 * One stream over a plain TCP socket with a hand-written HTTP/1.1 request and a minimal chunked
 * decoder: node:http's client costs a stream `data` event per chunk (one per SSE frame here), which
 * made it slower than the raw server it measures (results.md). `bytes` counts the SSE body
 * (what the server wrote), not the chunk framing or headers.
 */
function runStream(
	req: StreamRequest,
	t0: number,
	record: boolean,
	deltaNeedle = DELTA,
): Promise<StreamStats & { body?: string }> {
	return new Promise((resolve, reject) => {
		const url = new URL(req.url);
		const stats: StreamStats & { body?: string } = {
			bytes: 0,
			events: 0,
			textDeltas: 0,
			firstDeltaMs: -1,
			endMs: -1,
			status: 0,
		};
		const parts: Buffer[] = [];
		let tail = "";
		let head: Buffer | undefined = Buffer.alloc(0); // until the header block is complete
		let chunkLeft = 0; // payload bytes left in the current chunk
		let sizeLine = ""; // chunk-size line being read
		let afterPayload = 0; // CRLF bytes still to skip after a payload
		let finished = false;

		const finish = () => {
			if (finished) return;
			finished = true;
			stats.endMs = performance.now() - t0;
			if (record) stats.body = Buffer.concat(parts).toString("utf8");
			socket.destroy();
			resolve(stats);
		};
		const onPayload = (payload: Buffer) => {
			stats.bytes += payload.length;
			if (record) parts.push(payload);
			const text = tail + payload.toString("latin1");
			stats.events += countNew(text, EVENT, tail.length);
			const deltas = countNew(text, deltaNeedle, tail.length);
			if (deltas > 0 && stats.textDeltas === 0) stats.firstDeltaMs = performance.now() - t0;
			stats.textDeltas += deltas;
			tail = text.slice(-TAIL);
		};
		const onBody = (data: Buffer) => {
			let i = 0;
			while (i < data.length && !finished) {
				if (afterPayload > 0) {
					const skip = Math.min(afterPayload, data.length - i);
					afterPayload -= skip;
					i += skip;
				} else if (chunkLeft > 0) {
					const take = Math.min(chunkLeft, data.length - i);
					onPayload(data.subarray(i, i + take));
					chunkLeft -= take;
					i += take;
					if (chunkLeft === 0) afterPayload = 2;
				} else {
					const nl = data.indexOf(10, i);
					if (nl < 0) {
						sizeLine += data.toString("latin1", i);
						return;
					}
					sizeLine += data.toString("latin1", i, nl);
					i = nl + 1;
					const size = Number.parseInt(sizeLine.trim(), 16);
					sizeLine = "";
					if (size === 0) return finish();
					chunkLeft = size;
				}
			}
		};
		const socket = connect(Number(url.port), url.hostname, () => {
			const body = req.body === undefined ? undefined : Buffer.from(req.body);
			let request = `${req.method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\n`;
			for (const [k, v] of Object.entries(req.headers ?? {})) request += `${k}: ${v}\r\n`;
			if (body) request += `content-length: ${body.length}\r\n`;
			socket.write(`${request}\r\n`);
			if (body) socket.write(body);
		});
		socket.setNoDelay(true);
		socket.on("data", (data: Buffer) => {
			if (head) {
				const all = Buffer.concat([head, data]);
				const end = all.indexOf("\r\n\r\n");
				if (end < 0) {
					head = all;
					return;
				}
				const headers = all.toString("latin1", 0, end);
				stats.status = Number(headers.split(" ")[1]);
				if (!/transfer-encoding: chunked/i.test(headers)) {
					return reject(new Error(`expected a chunked response, got:\n${headers}`));
				}
				head = undefined;
				onBody(all.subarray(end + 4));
				return;
			}
			onBody(data);
		});
		socket.on("end", finish);
		socket.on("error", (error) => (finished ? undefined : reject(error)));
	});
}

/** `req.create`, then the stream with the id it answered. */
async function createThenStream(req: StreamRequest, t0: number, record: boolean, deltaNeedle?: string) {
	if (!req.create) return runStream(req, t0, record, deltaNeedle);
	const res = await fetch(req.create.url, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: req.create.body,
	});
	const text = await res.text();
	if (res.status !== 201) throw new Error(`POST ${req.create.url}: ${res.status} ${text}`);
	const { id } = JSON.parse(text) as { id: string };
	return runStream({ ...req, url: req.url.replace("{id}", encodeURIComponent(id)) }, t0, record, deltaNeedle);
}

async function runJob(job: ClientJob): Promise<ClientResult> {
	const t0 = performance.now();
	const results = await Promise.all(
		job.requests.map((req, i) => createThenStream(req, t0, job.record === true && i === 0, job.deltaNeedle)),
	);
	const wallMs = performance.now() - t0;
	const recorded = results[0]?.body;
	for (const r of results) delete r.body;
	return { wallMs, streams: results, recorded };
}

process.on("message", (job: ClientJob) => {
	runJob(job).then(
		(result) => process.send!(result),
		(error: Error) => process.send!({ wallMs: 0, streams: [], error: error.stack ?? String(error) }),
	);
});
