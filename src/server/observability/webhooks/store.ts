/**
 * The store as the sessions runtime sees it when webhooks are on: the same store, whose run ends,
 * pending interactions and interrupted runs carry their webhook deliveries into the same commit
 * (the store's `endRun`, `putPending` and `recoverInterrupted` take them), and which wakes the
 * dispatcher after each such write. The runtime marks runs interrupted one session at a time
 * (`recoverInterrupted` with `sessionIds`) only when it takes over sessions of a lost replica, so
 * those are reported with `reason: "replica_lost"`; the startup recovery of all sessions passes
 * its own deliveries.
 * `more` adds the deliveries of another reporter (the A2A facade's push notifications) to the same
 * commits, interrupted runs' included; it is asked synchronously, as the store's writes are made.
 * Everything else passes through untouched, so no other part of the server knows of webhooks.
 */
import type { NewWebhookDelivery, PendingInteraction, RunEnd, SessionStore } from "../../../store/types.js";
import type { WebhookEvents } from "./events.js";

/**
 * More deliveries to put with a run's end or a pending interaction.
 * Contract: must not throw, must not block (it is called inside the store's write).
 */
export interface MoreDeliveries {
	runEnded(sessionId: string, runId: string, end: RunEnd): NewWebhookDelivery[];
	pendingCreated(
		interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">,
		runId: string | null,
	): NewWebhookDelivery[];
	/** A run (`null`: none was active) found interrupted at `at` (its process died). */
	runInterrupted(sessionId: string, runId: string | null, at: number): NewWebhookDelivery[];
}

/** `webhooks` of a `recoverInterrupted` call with `more`'s deliveries added. */
export function withMoreInterrupted(
	at: number,
	webhooks: ((sessionId: string, runId: string | null) => NewWebhookDelivery[]) | undefined,
	more: MoreDeliveries | undefined,
): ((sessionId: string, runId: string | null) => NewWebhookDelivery[]) | undefined {
	if (!more) return webhooks;
	return (sessionId, runId) => [...(webhooks?.(sessionId, runId) ?? []), ...more.runInterrupted(sessionId, runId, at)];
}

export function withWebhookDeliveries(
	store: SessionStore,
	events: WebhookEvents,
	wake: () => void,
	more?: MoreDeliveries,
): SessionStore {
	const endRun: SessionStore["endRun"] = (sessionId, runId, end) => {
		const deliveries = events.runEnded(sessionId, runId, end);
		if (more) deliveries.push(...more.runEnded(sessionId, runId, end));
		const ended = store.endRun(sessionId, runId, end, deliveries);
		if (ended) wake();
		return ended;
	};
	const putPending: SessionStore["putPending"] = async (interaction) => {
		const put = await store.putPending(interaction, (runId) => [
			...events.pendingCreated(interaction, runId),
			...(more?.pendingCreated(interaction, runId) ?? []),
		]);
		if (put) wake();
		return put;
	};
	const recoverInterrupted: SessionStore["recoverInterrupted"] = async (at, webhooks, sessionIds) => {
		const reason = sessionIds ? "replica_lost" : "server_restart";
		const changed = await store.recoverInterrupted(
			at,
			withMoreInterrupted(
				at,
				webhooks ?? ((sessionId, runId) => events.runInterrupted(sessionId, runId, at, reason)),
				more,
			),
			sessionIds,
		);
		if (changed.length > 0) wake();
		return changed;
	};
	// Methods run on the store itself (its private state), not on the proxy; bound once, as the
	// hot path (`appendEvent`) goes through here on every event.
	const bound = new Map<PropertyKey, unknown>([
		["endRun", endRun],
		["putPending", putPending],
		["recoverInterrupted", recoverInterrupted],
	]);
	return new Proxy(store, {
		get(target, property) {
			const known = bound.get(property);
			if (known !== undefined) return known;
			const value = Reflect.get(target, property, target);
			if (typeof value !== "function") return value;
			const method = value.bind(target);
			bound.set(property, method);
			return method;
		},
	});
}
