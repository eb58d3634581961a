/**
 * The store as the sessions runtime sees it when webhooks are on: the same store, whose run ends
 * and pending interactions carry their webhook deliveries into the same commit (the store's
 * `endRun` and `putPending` take them), and which wakes the dispatcher after each such write.
 * Everything else passes through untouched, so no other part of the server knows of webhooks.
 */
import type { SessionStore } from "../../store/types.js";
import type { WebhookEvents } from "./events.js";

export function withWebhookDeliveries(store: SessionStore, events: WebhookEvents, wake: () => void): SessionStore {
	const endRun: SessionStore["endRun"] = (sessionId, runId, end) => {
		const ended = store.endRun(sessionId, runId, end, events.runEnded(sessionId, runId, end));
		if (ended) wake();
		return ended;
	};
	const putPending: SessionStore["putPending"] = async (interaction) => {
		const put = await store.putPending(interaction, (runId) => events.pendingCreated(interaction, runId));
		if (put) wake();
		return put;
	};
	// Methods run on the store itself (its private state), not on the proxy; bound once, as the
	// hot path (`appendEvent`) goes through here on every event.
	const bound = new Map<PropertyKey, unknown>([
		["endRun", endRun],
		["putPending", putPending],
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
