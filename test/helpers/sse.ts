/**
 * Reads an SSE response incrementally over a real socket (fetch + the package's own `readSse`),
 * so tests can wait for a given event instead of sleeping.
 */
import { readSse, type SseMessage } from "../../src/client/sse-parser.js";

export interface SseEvent {
	id: number | undefined;
	event: string;
	data: any;
}

export class SseReader {
	readonly events: SseEvent[] = [];
	readonly comments: string[] = [];
	retry: number | undefined;
	ended = false;
	error: unknown;
	private waiters: (() => void)[] = [];
	private readonly done: Promise<void>;

	constructor(
		readonly response: Response,
		private readonly controller: AbortController,
	) {
		this.done = this.pump();
	}

	private async pump(): Promise<void> {
		try {
			if (!this.response.body) return;
			for await (const message of readSse(this.response.body, {
				onRetry: (ms) => {
					this.retry = ms;
				},
				onComment: (c) => {
					this.comments.push(c);
					this.notify();
				},
			})) {
				this.events.push(toEvent(message));
				this.notify();
			}
		} catch (err) {
			this.error = err;
		} finally {
			this.ended = true;
			this.notify();
		}
	}

	private notify(): void {
		for (const w of this.waiters.splice(0)) w();
	}

	/** Resolves with the first event (from the start) matching `predicate`; rejects after `timeoutMs`. */
	async waitFor(predicate: (e: SseEvent) => boolean, timeoutMs = 5000): Promise<SseEvent> {
		const deadline = Date.now() + timeoutMs;
		for (;;) {
			const found = this.events.find(predicate);
			if (found) return found;
			if (this.ended) throw new Error(`stream ended without the awaited event; got: ${this.types().join(",")}`);
			const left = deadline - Date.now();
			if (left <= 0) throw new Error(`timed out waiting for an event; got: ${this.types().join(",")}`);
			await new Promise<void>((resolve) => {
				const t = setTimeout(resolve, left);
				this.waiters.push(() => {
					clearTimeout(t);
					resolve();
				});
			});
		}
	}

	waitForType(type: string, timeoutMs?: number): Promise<SseEvent> {
		return this.waitFor((e) => e.event === type, timeoutMs);
	}

	/** Resolves when the server ends the stream. */
	async waitForEnd(timeoutMs = 5000): Promise<void> {
		await Promise.race([
			this.done,
			new Promise((_, reject) =>
				setTimeout(() => reject(new Error(`stream did not end; got ${this.types().join(",")}`)), timeoutMs).unref(),
			),
		]);
	}

	types(): string[] {
		return this.events.map((e) => e.event);
	}

	ids(): number[] {
		return this.events.map((e) => e.id).filter((id): id is number => id !== undefined);
	}

	/** Disconnects (the client side of a dropped connection). */
	close(): void {
		this.controller.abort();
	}
}

function toEvent(message: SseMessage): SseEvent {
	let data: unknown = message.data;
	try {
		data = JSON.parse(message.data);
	} catch {
		// keep the raw text
	}
	return { id: message.id === undefined ? undefined : Number(message.id), event: message.event, data };
}

/** Opens an SSE request; throws with the body when the answer is not an event stream. */
export async function openSse(
	url: string,
	init: RequestInit & { headers?: Record<string, string> } = {},
): Promise<SseReader> {
	const controller = new AbortController();
	const response = await fetch(url, {
		...init,
		signal: controller.signal,
		headers: { accept: "text/event-stream", ...init.headers },
	});
	if (!response.headers.get("content-type")?.startsWith("text/event-stream")) {
		const text = await response.text();
		throw new Error(`expected an event stream, got ${response.status}: ${text}`);
	}
	return new SseReader(response, controller);
}

/** POSTs a prompt asking for SSE. */
export function promptSse(base: string, sessionId: string, body: unknown, key?: string): Promise<SseReader> {
	return openSse(`${base}/v1/sessions/${sessionId}/prompt`, {
		method: "POST",
		body: JSON.stringify(body),
		headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
	});
}
