import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A real local HTTP server (node:http on port 0) that plays scripted LLM responses, for provider
 * and end-to-end tests. Only the LLM is scripted: the client under test talks real HTTP to it.
 *
 * Each incoming request takes the next {@link ReplayResponse} from the queue (`enqueue`); when the
 * queue is empty, `fallback` is used (default: 500 "no scripted response"). Every request is
 * recorded (`requests`), with its parsed JSON body.
 *
 * A response body can be sent whole, one byte at a time, or split at random offsets (seeded, so a
 * failure is reproducible); the server can also reset the connection or stall after N bytes.
 */
export interface ReplayResponse {
	/** Default 200. */
	status?: number;
	/** Default `content-type: text/event-stream` for 2xx, `application/json` otherwise. */
	headers?: Record<string, string>;
	body?: string | Buffer;
	/**
	 * How the body is cut into writes (default `whole`): `bytes` one byte per write, `random`
	 * seeded sizes of 1–64 bytes, `utf8` inside every multi-byte UTF-8 character (after its first
	 * byte), or at the given offsets.
	 */
	split?: "whole" | "bytes" | "random" | "utf8" | number[];
	/** Seed for `random` splitting (default 1). */
	seed?: number;
	/** Destroy the socket after writing this many body bytes (0 = before any header). */
	resetAfterBytes?: number;
	/**
	 * With `resetAfterBytes`: wait for this promise (e.g. "the client saw the first delta") before
	 * resetting, so a test does not depend on how fast the client reads.
	 */
	resetWhen?: Promise<unknown>;
	/** Stop writing after this many body bytes and keep the connection open. */
	stallAfterBytes?: number;
	/**
	 * With `stallAfterBytes`: once this promise resolves (e.g. "the test saw the first delta"),
	 * write the rest of the body and end, so a test holds a model answer mid-stream for as long
	 * as it needs without sleeping.
	 */
	resumeWhen?: Promise<unknown>;
	/** Never answer at all (headers included). */
	stall?: boolean;
}

export interface RecordedRequest {
	method: string;
	url: string;
	headers: IncomingHttpHeaders;
	body: string;
	/** `body` parsed as JSON, or undefined. */
	json: any;
	/** `Date.now()` when the request arrived. */
	at: number;
}

export class ReplayServer {
	readonly requests: RecordedRequest[] = [];
	/** Number of TCP connections accepted (keep-alive reuse keeps this low). */
	connections = 0;
	fallback: ReplayResponse = { status: 500, body: JSON.stringify({ error: { message: "no scripted response" } }) };
	private readonly queue: ReplayResponse[] = [];
	private readonly server: Server;
	private readonly sockets = new Set<Socket>();
	private readonly waiters: { count: number; resolve: () => void }[] = [];
	private port = 0;

	constructor() {
		this.server = createServer((req, res) => {
			const chunks: Buffer[] = [];
			req.on("data", (chunk: Buffer) => chunks.push(chunk));
			req.on("end", () => {
				const body = Buffer.concat(chunks).toString("utf8");
				let json: any;
				try {
					json = body ? JSON.parse(body) : undefined;
				} catch {
					json = undefined;
				}
				this.requests.push({
					method: req.method ?? "",
					url: req.url ?? "",
					headers: req.headers,
					body,
					json,
					at: Date.now(),
				});
				for (const waiter of [...this.waiters]) {
					if (this.requests.length >= waiter.count) {
						this.waiters.splice(this.waiters.indexOf(waiter), 1);
						waiter.resolve();
					}
				}
				const scripted = this.queue.shift() ?? this.fallback;
				void this.respond(res, scripted);
			});
		});
		this.server.on("connection", (socket) => {
			this.connections++;
			socket.setNoDelay(true);
			this.sockets.add(socket);
			socket.on("close", () => this.sockets.delete(socket));
		});
	}

	/** Starts listening on 127.0.0.1, port 0. */
	async start(): Promise<this> {
		await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
		this.port = (this.server.address() as AddressInfo).port;
		return this;
	}

	/** `http://127.0.0.1:<port>` — use as (or inside) a model's `baseUrl`. */
	get url(): string {
		return `http://127.0.0.1:${this.port}`;
	}

	enqueue(...responses: ReplayResponse[]): this {
		this.queue.push(...responses);
		return this;
	}

	/** Forgets recorded requests and unused scripted responses (for `afterEach`). */
	reset(): void {
		this.requests.length = 0;
		this.queue.length = 0;
	}

	/** Scripted responses not yet used. */
	get pending(): number {
		return this.queue.length;
	}

	/** Resolves once `count` requests in all have arrived. */
	waitForRequests(count: number): Promise<void> {
		if (this.requests.length >= count) return Promise.resolve();
		return new Promise((resolve) => this.waiters.push({ count, resolve }));
	}

	async close(): Promise<void> {
		for (const socket of this.sockets) socket.destroy();
		await new Promise<void>((resolve) => this.server.close(() => resolve()));
	}

	private async respond(res: ServerResponse, scripted: ReplayResponse): Promise<void> {
		if (scripted.stall) return;
		if (scripted.resetAfterBytes === 0) {
			res.socket?.destroy();
			return;
		}
		const status = scripted.status ?? 200;
		const headers = {
			"content-type": status < 300 ? "text/event-stream" : "application/json",
			...scripted.headers,
		};
		res.writeHead(status, headers);
		res.flushHeaders();
		const body =
			typeof scripted.body === "string" ? Buffer.from(scripted.body, "utf8") : (scripted.body ?? Buffer.alloc(0));
		const limit = Math.min(body.length, scripted.resetAfterBytes ?? scripted.stallAfterBytes ?? body.length);
		for (const piece of splitBody(body.subarray(0, limit), scripted.split ?? "whole", scripted.seed ?? 1)) {
			if (res.destroyed) return;
			if (!res.write(piece)) await new Promise((resolve) => res.once("drain", resolve));
			// Let each piece leave as its own packet, so the client really reads small chunks.
			if (scripted.split && scripted.split !== "whole") await new Promise((resolve) => setImmediate(resolve));
		}
		if (scripted.resetAfterBytes !== undefined) {
			if (scripted.resetWhen) await scripted.resetWhen;
			res.socket?.destroy();
			return;
		}
		if (scripted.stallAfterBytes !== undefined) {
			if (!scripted.resumeWhen) return;
			await scripted.resumeWhen;
			if (res.destroyed) return;
			res.end(body.subarray(limit));
			return;
		}
		res.end();
	}
}

/** Cuts `body` into pieces: whole, single bytes, seeded random sizes (1–64 bytes), inside multi-byte characters, or at given offsets. */
export function splitBody(body: Buffer, split: ReplayResponse["split"], seed = 1): Buffer[] {
	if (body.length === 0) return [];
	if (split === undefined || split === "whole") return [body];
	const pieces: Buffer[] = [];
	if (split === "bytes") {
		for (let i = 0; i < body.length; i++) pieces.push(body.subarray(i, i + 1));
		return pieces;
	}
	if (split === "utf8") {
		const offsets: number[] = [];
		for (let i = 0; i < body.length; i++) {
			// A lead byte of a multi-byte sequence (11xxxxxx): cut right after it.
			if ((body[i]! & 0xc0) === 0xc0) offsets.push(i + 1);
		}
		return splitBody(body, offsets);
	}
	if (Array.isArray(split)) {
		let start = 0;
		for (const offset of [...split, body.length]) {
			if (offset > start) pieces.push(body.subarray(start, Math.min(offset, body.length)));
			start = Math.max(start, offset);
		}
		return pieces;
	}
	const random = mulberry32(seed);
	for (let start = 0; start < body.length; ) {
		const size = 1 + Math.floor(random() * 64);
		pieces.push(body.subarray(start, start + size));
		start += size;
	}
	return pieces;
}

function mulberry32(seed: number): () => number {
	let state = seed >>> 0;
	return () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** One Chat Completions stream chunk (a `data:` frame) of model `tiny`, with `extra`'s fields (choices, usage). */
export function chatChunk(extra: object): string {
	return `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "tiny", ...extra })}\n\n`;
}

/** A whole Chat Completions stream answering `text` and reporting `total` tokens (10 of them output). */
export function chatAnswer(text: string, total: number): { body: string } {
	return {
		body:
			chatChunk({ choices: [{ index: 0, delta: { role: "assistant", content: text }, finish_reason: null }] }) +
			chatChunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) +
			chatChunk({ choices: [], usage: { prompt_tokens: total - 10, completion_tokens: 10, total_tokens: total } }) +
			"data: [DONE]\n\n",
	};
}

/** Starts a {@link ReplayServer}. */
export async function startReplayServer(): Promise<ReplayServer> {
	return new ReplayServer().start();
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/**
 * The recorded provider streams (`test/fixtures/providers`, with their origins in its README and
 * manifest). They are part of the repository: a missing file is an error, never a skipped test.
 */
export const fixturesDir = path.join(repoRoot, "test/fixtures/providers");

export interface FixtureEntry {
	file: string;
	bytes: number;
	kind: string;
	contains: string;
	expected: any;
}

/**
 * The fixtures' manifest entries (only those under `api/` when given). Throws when the manifest is
 * missing or has no entry for `api`, so a test over them fails instead of passing with no cases.
 */
export function loadFixtureManifest(api?: string): FixtureEntry[] {
	const manifest: { files: FixtureEntry[] } = JSON.parse(readFileSync(path.join(fixturesDir, "manifest.json"), "utf8"));
	const entries = api ? manifest.files.filter((entry) => entry.file.startsWith(`${api}/`)) : manifest.files;
	if (entries.length === 0) throw new Error(`${fixturesDir}/manifest.json lists no recorded stream under ${api}/`);
	return entries;
}

/** The bytes of one fixture file (path relative to the fixtures directory); throws when it is missing. */
export function readFixture(file: string): Buffer {
	return readFileSync(path.join(fixturesDir, file));
}
