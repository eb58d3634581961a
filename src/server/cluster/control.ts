/**
 * Control messages between replicas: a request served on one replica that changes what a run on
 * another must do. The change itself is written to the store first (the request is answered only
 * once it is durable); the message on Redis only tells the replica running the session to take
 * it in now. Every replica hears every message and acts on the sessions it runs.
 *
 * - `queue`: steering / follow-up messages were queued or cleared: re-read the stored queue.
 * - `abort`: abort the run.
 * - `pending`: an approval or a client tool result was stored: deliver it to the waiting call.
 * - `config`: the session's config changed: apply the stored one to the running Agent.
 * - `delete`: the session was deleted: abort its run here, end its streams, forget it.
 */
import type { FastifyBaseLogger } from "fastify";
import type { SessionManager } from "../session/manager.js";
import type { ToolInteractions } from "../session/tool-interactions.js";
import type { EventSubscriptions } from "./event-subscriptions.js";
import { controlChannel, type RedisLink } from "./redis.js";

export type ControlMessage =
	| { t: "queue" | "abort" | "config" | "delete"; s: string }
	| { t: "pending"; s: string; kind: "approval" | "client_tool"; call: string };

interface Envelope {
	m: ControlMessage;
	/** Sender's replica id. */
	from: string;
}

export interface ControlBusOptions {
	redis: RedisLink;
	prefix: string;
	replicaId: string;
	sessions: SessionManager;
	subscriptions: EventSubscriptions;
	logger: FastifyBaseLogger;
	/** The tool interactions extension (set once the tools plugin made it). */
	interactions(): ToolInteractions | undefined;
}

export class ControlBus {
	constructor(private readonly options: ControlBusOptions) {
		const channel = controlChannel(options.prefix);
		options.redis.subscriber.on("message", (from: string, message: string) => {
			if (from === channel) this.receive(message);
		});
	}

	/** Subscribes to the control channel; rejects when Redis cannot be reached. */
	async start(): Promise<void> {
		await this.options.redis.subscriber.subscribe(controlChannel(this.options.prefix));
	}

	/**
	 * Sends `message` to every replica. Resolves to false when Redis could not take it: the change
	 * is in the store, and the run takes it in at its next re-read (queue, config at the next run).
	 */
	async send(message: ControlMessage): Promise<boolean> {
		const envelope: Envelope = { m: message, from: this.options.replicaId };
		try {
			await this.options.redis.publisher.publish(controlChannel(this.options.prefix), JSON.stringify(envelope));
			return true;
		} catch (err) {
			this.options.logger.warn({ err, control: message.t, sessionId: message.s }, "control message not sent");
			return false;
		}
	}

	private receive(raw: string): void {
		let envelope: Envelope;
		try {
			envelope = JSON.parse(raw) as Envelope;
		} catch {
			return;
		}
		const { m } = envelope;
		if (typeof m?.s !== "string") return;
		this.apply(m).catch((err: unknown) =>
			this.options.logger.error({ err, control: m.t, sessionId: m.s }, "control message failed"),
		);
	}

	/** Applies `m` if this replica runs its session (any replica for `delete`). Resolves to whether it did. */
	private async apply(m: ControlMessage): Promise<boolean> {
		const { sessions, subscriptions } = this.options;
		if (m.t === "delete") {
			subscriptions.closeSession(m.s, "session deleted");
			await sessions.forget(m.s, "session deleted");
			return true;
		}
		const session = sessions.inMemory(m.s);
		if (!session?.isBusy) return false;
		switch (m.t) {
			case "abort":
				session.abort();
				return true;
			case "queue":
				await session.reloadQueue();
				return true;
			case "config": {
				const record = await session.store.getSession(m.s);
				if (record) session.adoptConfig(record);
				return true;
			}
			case "pending": {
				const interactions = this.options.interactions();
				if (!interactions) return false;
				const stored = (await session.store.listPending(m.s, { includeResolved: true })).find(
					(p) => p.toolCallId === m.call && p.kind === m.kind,
				);
				if (!stored?.resolution) return false;
				const value = JSON.parse(stored.resolution);
				if (m.kind === "approval") interactions.resolveApproval(session, m.call, value);
				else interactions.resolveToolResult(session, m.call, value);
				return true;
			}
		}
		return false;
	}
}
