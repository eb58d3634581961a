/**
 * What the server reports to webhook endpoints, as outbox deliveries: one per event and
 * subscribed endpoint, with its own id (the `webhook-id` of every attempt) and its body fixed once
 * (`{type, timestamp, data: {sessionId, runId, ...}}`), so retries send the same bytes. The events
 * of a session in memory name who it belongs to: `ownerId` (a hash of the API key or of the JWT's
 * issuer, tenant and subject; never a credential) and `tenant` (null without one); with auth off
 * they have no owner and name none.
 *
 * - `run.completed` / `run.failed`: a run ended normally / with an error;
 * - `run.interrupted`: a run did not finish — aborted by a client (`reason: "aborted"`) or cut by
 *   a stop of the server (`reason: "server_restart"`, reported by the startup recovery) or, in a
 *   cluster, the loss of the replica running it (`reason: "replica_lost"`, reported by the replica
 *   that took the session over);
 * - `approval.requested` / `client_tool.requested`: a tool call waits for a client;
 * - `schedule.fired` / `schedule.skipped` / `schedule.missed` / `schedule.failed`: what a fire of
 *   a schedule came to (src/server/runtime/schedules/).
 */
import { randomBytes } from "node:crypto";
import type { NewWebhookDelivery, PendingInteraction, RunEnd } from "../../../store/types.js";
import type { WebhookEventType, WebhookSettings } from "./settings.js";

/** Who a session belongs to: its owner id and tenant. */
export interface SessionOwner {
	ownerId: string | null;
	tenant: string | null;
}

export class WebhookEvents {
	/**
	 * `ownerOf`: the owner of a session in memory (synchronous: a run's end is written in the same
	 * commit as its deliveries); undefined for one that is not, whose events then name no owner.
	 */
	constructor(
		private readonly settings: WebhookSettings,
		private readonly ownerOf: (sessionId: string) => SessionOwner | undefined = () => undefined,
	) {}

	/** `ownerId` and `tenant` of the session, when known and it has an owner (auth on). */
	private owner(sessionId: string): Partial<SessionOwner> {
		const owner = this.ownerOf(sessionId);
		return owner?.ownerId ? { ownerId: owner.ownerId, tenant: owner.tenant } : {};
	}

	/** The deliveries of a run's end (`endRun`). */
	runEnded(sessionId: string, runId: string, end: RunEnd): NewWebhookDelivery[] {
		const type: WebhookEventType =
			end.status === "completed" ? "run.completed" : end.status === "error" ? "run.failed" : "run.interrupted";
		return this.deliveries(type, end.endedAt, {
			sessionId,
			...this.owner(sessionId),
			runId,
			status: end.status,
			...(type === "run.interrupted" ? { reason: "aborted" } : {}),
			endedAt: end.endedAt,
			usage: end.usage,
			...(end.errorMessage !== undefined ? { errorMessage: end.errorMessage } : {}),
		});
	}

	/** The deliveries of a run the recovery marked interrupted (`recoverInterrupted`). */
	runInterrupted(
		sessionId: string,
		runId: string | null,
		at: number,
		reason: "server_restart" | "replica_lost" = "server_restart",
	): NewWebhookDelivery[] {
		return this.deliveries("run.interrupted", at, {
			sessionId,
			...this.owner(sessionId),
			runId,
			status: "interrupted",
			reason,
			endedAt: at,
		});
	}

	/** The deliveries of a tool call that starts waiting for a client (`putPending`). */
	pendingCreated(
		interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">,
		runId: string | null,
	): NewWebhookDelivery[] {
		const payload = parseObject(interaction.payload);
		return this.deliveries(
			interaction.kind === "approval" ? "approval.requested" : "client_tool.requested",
			interaction.createdAt,
			{
				sessionId: interaction.sessionId,
				...this.owner(interaction.sessionId),
				runId,
				toolCallId: interaction.toolCallId,
				toolName: payload.toolName ?? null,
				args: payload.args ?? null,
				...(typeof payload.expiresAt === "number" ? { expiresAt: payload.expiresAt } : {}),
			},
		);
	}

	/** The deliveries of a schedule's fire reaching its outcome (`data` says which fire). */
	scheduleFire(
		type: "schedule.fired" | "schedule.skipped" | "schedule.missed" | "schedule.failed",
		at: number,
		data: Record<string, unknown>,
	): NewWebhookDelivery[] {
		return this.deliveries(type, at, data);
	}

	private deliveries(type: WebhookEventType, at: number, data: Record<string, unknown>): NewWebhookDelivery[] {
		const endpoints = this.settings.endpoints.filter((e) => e.events.has(type));
		if (endpoints.length === 0) return [];
		const payload = JSON.stringify({ type, timestamp: new Date(at).toISOString(), data });
		return endpoints.map((endpoint) => ({
			id: newWebhookId(),
			endpoint: endpoint.url,
			eventType: type,
			payload,
			createdAt: at,
		}));
	}
}

/** A delivery id: `msg_` and 24 random bytes (unguessable and unique without coordination). */
export function newWebhookId(): string {
	return `msg_${randomBytes(18).toString("base64url")}`;
}

function parseObject(text: string): Record<string, unknown> {
	try {
		const value = JSON.parse(text) as unknown;
		return typeof value === "object" && value !== null && !Array.isArray(value)
			? (value as Record<string, unknown>)
			: {};
	} catch {
		return {};
	}
}
