/**
 * What the server reports to webhook endpoints, as outbox deliveries: one per event and
 * subscribed endpoint, with its own id (the `webhook-id` of every attempt) and its body fixed once
 * (`{type, timestamp, data: {sessionId, runId, ...}}`), so retries send the same bytes.
 *
 * - `run.completed` / `run.failed`: a run ended normally / with an error;
 * - `run.interrupted`: a run did not finish — aborted by a client (`reason: "aborted"`) or cut by
 *   a stop of the server (`reason: "server_restart"`, reported by the startup recovery) or, in a
 *   cluster, the loss of the replica running it (`reason: "replica_lost"`, reported by the replica
 *   that took the session over);
 * - `approval.requested` / `client_tool.requested`: a tool call waits for a client.
 */
import { randomBytes } from "node:crypto";
import type { NewWebhookDelivery, PendingInteraction, RunEnd } from "../../store/types.js";
import type { WebhookEventType, WebhookSettings } from "./settings.js";

export class WebhookEvents {
	constructor(private readonly settings: WebhookSettings) {}

	/** The deliveries of a run's end (`endRun`). */
	runEnded(sessionId: string, runId: string, end: RunEnd): NewWebhookDelivery[] {
		const type: WebhookEventType =
			end.status === "completed" ? "run.completed" : end.status === "error" ? "run.failed" : "run.interrupted";
		return this.deliveries(type, end.endedAt, {
			sessionId,
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
				runId,
				toolCallId: interaction.toolCallId,
				toolName: payload.toolName ?? null,
				args: payload.args ?? null,
				...(typeof payload.expiresAt === "number" ? { expiresAt: payload.expiresAt } : {}),
			},
		);
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
