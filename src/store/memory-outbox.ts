/**
 * The in-memory store's webhook outbox (`WebhookOutbox` of types.ts): deliveries in a map, lost
 * with the process like everything else of the memory store. The memory store puts the deliveries
 * of a run end or a pending interaction within the same call as the fact itself (`put`).
 */
import { checkLimit, closedError } from "./shared.js";
import type { NewWebhookDelivery, WebhookDelivery, WebhookOutbox, WebhookStatus } from "./types.js";

export class MemoryWebhookOutbox implements WebhookOutbox {
	private readonly deliveries = new Map<string, WebhookDelivery>();

	constructor(private readonly isClosed: () => boolean) {}

	/** Puts deliveries at once; throws on a duplicate id (misuse) before putting any. */
	put(deliveries: readonly NewWebhookDelivery[]): void {
		const ids = new Set<string>();
		for (const d of deliveries) {
			if (this.deliveries.has(d.id) || ids.has(d.id))
				throw new Error(`webhook delivery ${d.id} exists: generate a new id per delivery`);
			ids.add(d.id);
		}
		for (const d of deliveries) {
			this.deliveries.set(d.id, {
				id: d.id,
				endpoint: d.endpoint,
				eventType: d.eventType,
				payload: d.payload,
				createdAt: d.createdAt,
				status: "pending",
				attempts: 0,
				nextAttemptAt: d.createdAt,
				lastError: null,
				finishedAt: null,
			});
		}
	}

	async enqueueWebhooks(deliveries: NewWebhookDelivery[]): Promise<void> {
		this.open();
		this.put(deliveries);
	}

	async claimWebhooks(now: number, limit: number, claimUntil: number): Promise<WebhookDelivery[]> {
		this.open();
		const max = checkLimit("limit", limit, 100, 1, 10_000);
		const due = [...this.deliveries.values()]
			.filter((d) => d.status === "pending" && d.nextAttemptAt <= now)
			.sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || compare(a, b))
			.slice(0, max);
		for (const d of due) d.nextAttemptAt = claimUntil;
		return due.map((d) => ({ ...d }));
	}

	async settleWebhook(id: string, outcome: Parameters<WebhookOutbox["settleWebhook"]>[1]): Promise<boolean> {
		this.open();
		const d = this.deliveries.get(id);
		if (d?.status !== "pending") return false;
		d.attempts = outcome.attempts;
		if (outcome.status === "pending") {
			d.nextAttemptAt = outcome.nextAttemptAt;
			d.lastError = outcome.error;
		} else {
			d.status = outcome.status;
			d.finishedAt = outcome.at;
			if (outcome.status === "failed") d.lastError = outcome.error;
		}
		return true;
	}

	async listWebhooks(options: { status?: WebhookStatus; limit?: number } = {}): Promise<WebhookDelivery[]> {
		this.open();
		const max = checkLimit("limit", options.limit, 100, 1, 10_000);
		return [...this.deliveries.values()]
			.filter((d) => options.status === undefined || d.status === options.status)
			.sort(compare)
			.slice(0, max)
			.map((d) => ({ ...d }));
	}

	async pruneWebhooks(cutoff: number): Promise<number> {
		this.open();
		let n = 0;
		for (const [id, d] of this.deliveries) {
			if (d.finishedAt !== null && d.finishedAt < cutoff) {
				this.deliveries.delete(id);
				n++;
			}
		}
		return n;
	}

	private open(): void {
		if (this.isClosed()) throw closedError();
	}
}

function compare(a: WebhookDelivery, b: WebhookDelivery): number {
	return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
