/**
 * Delivers the webhook outbox of one app: claims due deliveries, sends each (a signed POST with a
 * timeout), and settles the attempt in the store — delivered on a 2xx, given up on a 410 (the
 * receiver says the endpoint is gone: retrying cannot succeed) or after `maxAttempts`, otherwise
 * due again after an exponential backoff with jitter. At least once: a delivery keeps its id
 * across attempts and processes, and one whose attempt was cut short is sent again.
 *
 * Deliveries whose endpoint a {@link DeliveryRouter} claims (the A2A facade's push notifications,
 * whose target is a task's push config rather than a configured endpoint) are routed by it at
 * each attempt: sent to the target it names, expanded into the deliveries it returns (put in the
 * outbox, then this one is done), or given up.
 *
 * Wakes on `wake()` (a run end or pending interaction was just put) and every `pollMs` (retries
 * that came due, deliveries a previous process left). `close()` stops claiming, cuts the attempts
 * in flight and makes their deliveries due at once for the next process.
 */
import type { FastifyBaseLogger } from "fastify";
import { undici } from "../../../ai/http.js";
import { redactUrl } from "../../../ai/redact-url.js";
import type { NewWebhookDelivery, SessionStore, WebhookDelivery } from "../../../store/types.js";
import type { ServerMetrics } from "../metrics.js";
import type { WebhookEndpoint, WebhookSettings } from "./settings.js";
import { signatureHeaders } from "./sign.js";

/** Finished deliveries are pruned at most this often. */
const PRUNE_EVERY_MS = 3_600_000;
/** A claim outlasts its attempt by this much, so a live attempt is never claimed twice. */
const CLAIM_MARGIN_MS = 5000;

/** Where one attempt of a routed delivery goes. */
export type DeliveryRoute =
	/** POST the payload to `target` with `headers` (plus `webhook-id`); `logged` names it in logs. */
	| { kind: "send"; target: string; headers: Record<string, string>; logged: string }
	/** Put `deliveries` in the outbox; this delivery is then done. */
	| { kind: "expand"; deliveries: NewWebhookDelivery[] }
	/** Try again later (the target could not be found out now). */
	| { kind: "retry"; error: string }
	/** Give the delivery up (its target no longer exists or is refused). */
	| { kind: "gone"; error: string };

/**
 * Routes the deliveries of endpoints that are not configured webhook endpoints.
 * Contract: `route` must not throw (a failure is `gone`, or a `send` that fails).
 */
export interface DeliveryRouter {
	/** Whether the delivery's `endpoint` is one of this router's. */
	handles(endpoint: string): boolean;
	route(delivery: WebhookDelivery): Promise<DeliveryRoute>;
}

export interface WebhookDispatcherOptions {
	store: SessionStore;
	/** Routers of deliveries to endpoints other than the configured ones. */
	routers?: readonly DeliveryRouter[];
	settings: WebhookSettings;
	logger: FastifyBaseLogger;
	metrics?: ServerMetrics;
	/** Default `Date.now`. */
	now?: () => number;
	/** Default `Math.random` (the backoff's jitter). */
	random?: () => number;
}

type Attempt = { status: "delivered" } | { status: "gone" | "error"; error: string };

export class WebhookDispatcher {
	private readonly endpoints: Map<string, WebhookEndpoint>;
	private readonly inFlight = new Map<string, Promise<void>>();
	private readonly stopping = new AbortController();
	private timer: NodeJS.Timeout | undefined;
	private running: Promise<void> | undefined;
	private again = false;
	private lastPrune = 0;
	private closed = false;

	constructor(private readonly options: WebhookDispatcherOptions) {
		this.endpoints = new Map(options.settings.endpoints.map((e) => [e.url, e]));
	}

	/** Starts polling (and sends what is due now). */
	start(): void {
		this.schedule(0);
	}

	/** Looks for due deliveries soon (something was just put in the outbox). */
	wake(): void {
		if (this.closed) return;
		if (this.running) this.again = true;
		else this.schedule(0);
	}

	/** Stops: no new attempt; attempts in flight are cut and their deliveries due again at once. */
	async close(): Promise<void> {
		if (this.closed) return;
		this.closed = true;
		clearTimeout(this.timer);
		this.stopping.abort();
		await this.running;
		await Promise.all(this.inFlight.values());
	}

	private schedule(ms: number): void {
		if (this.closed) return;
		clearTimeout(this.timer);
		this.timer = setTimeout(() => {
			this.running = this.pass().finally(() => {
				this.running = undefined;
				const soon = this.again;
				this.again = false;
				this.schedule(soon ? 0 : this.options.settings.pollMs);
			});
		}, ms);
		this.timer.unref();
	}

	/** Claims what is due, up to the free slots, and starts an attempt for each. */
	private async pass(): Promise<void> {
		const { store, settings } = this.options;
		const now = this.now();
		try {
			const free = settings.concurrency - this.inFlight.size;
			if (free > 0) {
				const due = await store.claimWebhooks(now, free, now + settings.timeoutMs + CLAIM_MARGIN_MS);
				for (const delivery of due) {
					if (this.closed) break;
					const attempt = this.attempt(delivery).finally(() => {
						this.inFlight.delete(delivery.id);
						this.wake(); // a slot is free
					});
					this.inFlight.set(delivery.id, attempt);
				}
				// A full claim may leave more due deliveries behind.
				if (due.length === free) this.again = true;
			}
			if (settings.retentionMs > 0 && now - this.lastPrune >= PRUNE_EVERY_MS) {
				this.lastPrune = now;
				await store.pruneWebhooks(now - settings.retentionMs);
			}
		} catch (error) {
			if (!this.closed) this.options.logger.error({ err: error }, "webhook outbox: cannot claim due deliveries");
		}
	}

	private async attempt(delivery: WebhookDelivery): Promise<void> {
		const { store, settings, logger, metrics } = this.options;
		const attempts = delivery.attempts + 1;
		const endpoint = this.endpoints.get(delivery.endpoint);
		const router = endpoint ? undefined : this.options.routers?.find((r) => r.handles(delivery.endpoint));
		let logged = endpoint?.logged;
		let outcome: Attempt;
		if (endpoint) {
			outcome = await this.send(endpoint.target, delivery, {
				...(endpoint.authorization ? { authorization: endpoint.authorization } : {}),
				...signatureHeaders(endpoint.key, delivery.id, delivery.payload, this.now()),
			});
		} else if (router) {
			const route = await router.route(delivery);
			if (route.kind === "expand") {
				outcome = await this.expand(delivery, route.deliveries);
			} else if (route.kind === "send") {
				logged = route.logged;
				outcome = await this.send(route.target, delivery, { ...route.headers, "webhook-id": delivery.id });
			} else {
				outcome = { status: route.kind === "retry" ? "error" : "gone", error: route.error };
			}
		} else {
			outcome = { status: "gone", error: "endpoint no longer configured" };
		}
		const now = this.now();
		try {
			if (this.stopping.signal.aborted && outcome.status !== "delivered") {
				// Cut by the stop, not failed: the next process sends it at once, the attempt uncounted.
				await store.settleWebhook(delivery.id, {
					status: "pending",
					attempts: delivery.attempts,
					nextAttemptAt: now,
					error: "interrupted by a server stop",
				});
				return;
			}
			if (outcome.status === "delivered") {
				await store.settleWebhook(delivery.id, { status: "delivered", attempts, at: now });
				metrics?.countWebhook(delivery.eventType, "delivered");
				return;
			}
			// Bare: an endpoint URL may carry credentials (userinfo, a token in the query).
			const fields = {
				webhookId: delivery.id,
				endpoint: logged ?? redactUrl(delivery.endpoint, { bare: true }),
				event: delivery.eventType,
				attempts,
			};
			if (outcome.status === "gone" || attempts >= settings.maxAttempts) {
				await store.settleWebhook(delivery.id, { status: "failed", attempts, at: now, error: outcome.error });
				metrics?.countWebhook(delivery.eventType, "failed");
				logger.warn({ ...fields, error: outcome.error }, "webhook delivery given up");
				return;
			}
			const nextAttemptAt = now + this.backoff(attempts);
			await store.settleWebhook(delivery.id, { status: "pending", attempts, nextAttemptAt, error: outcome.error });
			metrics?.countWebhook(delivery.eventType, "retry");
			logger.info({ ...fields, error: outcome.error, nextAttemptAt }, "webhook delivery failed; will retry");
		} catch (error) {
			// The claim runs out and the delivery is sent again: at least once still holds.
			logger.error({ err: error, webhookId: delivery.id }, "webhook outbox: cannot record a delivery attempt");
		}
	}

	/** Puts the deliveries a router expanded one into; never throws. */
	private async expand(delivery: WebhookDelivery, deliveries: NewWebhookDelivery[]): Promise<Attempt> {
		try {
			if (deliveries.length > 0) await this.options.store.enqueueWebhooks(deliveries);
			if (deliveries.length > 0) this.wake();
			return { status: "delivered" };
		} catch (error) {
			// Not put: the delivery is attempted again, and expanded again then.
			return { status: "error", error: `cannot expand ${delivery.id}: ${(error as Error).message}` };
		}
	}

	/** One POST (signed by `headers` for a configured endpoint); never throws. */
	private async send(target: string, delivery: WebhookDelivery, headers: Record<string, string>): Promise<Attempt> {
		const { timeoutMs } = this.options.settings;
		// One controller per attempt, cut by its timeout or the stop; the stop listener is removed after.
		const cut = new AbortController();
		const onStop = () => cut.abort(this.stopping.signal.reason);
		this.stopping.signal.addEventListener("abort", onStop, { once: true });
		const timer = setTimeout(() => cut.abort(new DOMException("webhook attempt timed out", "TimeoutError")), timeoutMs);
		try {
			// undici is loaded by the first delivery, not with the server (see ai/http.ts).
			const response = await undici().request(target, {
				method: "POST",
				headers: { "content-type": "application/json", "user-agent": "Wheelhouse-Webhooks", ...headers },
				body: delivery.payload,
				headersTimeout: timeoutMs,
				bodyTimeout: timeoutMs,
				signal: cut.signal,
			});
			await response.body.dump();
			if (response.statusCode >= 200 && response.statusCode < 300) return { status: "delivered" };
			return { status: response.statusCode === 410 ? "gone" : "error", error: `HTTP ${response.statusCode}` };
		} catch (error) {
			const name = (error as Error).name;
			const message = name === "TimeoutError" || name === "HeadersTimeoutError" ? "timeout" : (error as Error).message;
			return { status: "error", error: message };
		} finally {
			clearTimeout(timer);
			this.stopping.signal.removeEventListener("abort", onStop);
		}
	}

	/** Exponential backoff with "equal jitter": half the step fixed, half random. */
	private backoff(attempts: number): number {
		const { retryBaseMs, retryMaxMs } = this.options.settings;
		const step = Math.min(retryMaxMs, retryBaseMs * 2 ** (attempts - 1));
		return Math.round(step / 2 + (this.options.random ?? Math.random)() * (step / 2));
	}

	private now(): number {
		return (this.options.now ?? Date.now)();
	}
}
