/**
 * The measuring client of bench/sse: a separate process (forked by index.ts) so the server under
 * test has its own core. It receives one job over IPC, opens every stream of the job at once with
 * node:http, and reports bytes, events, text deltas and timings per stream.
 *
 * Frames are counted by scanning the bytes (a `\ndata: ` per event, `"type":"text_delta"` per
 * delta) rather than parsed, so the client costs the same for every server and stays far from
 * being the bottleneck.
 */
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";

export interface StreamRequest {
	method: "GET" | "POST";
	url: string;
	headers?: Record<string, string>;
	body?: string;
}

export interface ClientJob {
	requests: StreamRequest[];
	/** Return the body of the first stream (to record it for the raw writer). */
	record?: boolean;
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

const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
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

function runStream(req: StreamRequest, t0: number, record: boolean): Promise<StreamStats & { body?: string }> {
	return new Promise((resolve, reject) => {
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
		const r = request(req.url, { method: req.method, headers: req.headers, agent }, (res) => {
			stats.status = res.statusCode ?? 0;
			res.on("data", (chunk: Buffer) => {
				stats.bytes += chunk.length;
				if (record) parts.push(chunk);
				const text = tail + chunk.toString("latin1");
				stats.events += countNew(text, EVENT, tail.length);
				const deltas = countNew(text, DELTA, tail.length);
				if (deltas > 0 && stats.textDeltas === 0) stats.firstDeltaMs = performance.now() - t0;
				stats.textDeltas += deltas;
				tail = text.slice(-TAIL);
			});
			res.on("end", () => {
				stats.endMs = performance.now() - t0;
				if (record) stats.body = Buffer.concat(parts).toString("utf8");
				resolve(stats);
			});
			res.on("error", reject);
		});
		r.on("error", reject);
		r.end(req.body);
	});
}

async function runJob(job: ClientJob): Promise<ClientResult> {
	const t0 = performance.now();
	const results = await Promise.all(job.requests.map((req, i) => runStream(req, t0, job.record === true && i === 0)));
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
