/**
 * Control messages between replicas: a request served on one replica that changes what a run on
 * another must do. The change itself is written to the store first (the request is answered only
 * once it is durable); the message on Redis only tells the replica running the session to take
 * it in now. Every replica hears every message and acts on the sessions it runs.
 *
 * - `queue`: steering / follow-up messages were queued or cleared: re-read the stored queue.
 * - `abort`: abort the run (stored first as well, see `aborts.ts`: a replica whose control channel
 *   was away looks for stored aborts of its runs, every `recheckMs` while it is away and once
 *   when it is back, since pub/sub keeps nothing for a subscriber that is not there).
 * - `pending`: an approval or a client tool result was stored: deliver it to the waiting call.
 * - `config`: the session's config changed: apply the stored one to the running Agent.
 * - `delete`: the session was deleted: abort its run here, end its streams, forget it.
 *
 * One session's messages are applied in the order they were sent.
 */
import type { FastifyBaseLogger } from "fastify";
import type { SessionManager } from "../runtime/session/manager.js";
import type { ControlMessage } from "../runtime/session/port-context.js";
import type { ToolInteractions } from "../runtime/session/tool-interactions.js";
import { abortRecorded } from "./aborts.js";
import type { EventSubscriptions } from "./event-subscriptions.js";
import { controlChannel, type RedisLink } from "./redis.js";

export type { ControlMessage };

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
	/** While the control channel is away, how often the runs here look for stored aborts. */
	recheckMs: number;
}

export class ControlBus {
	private readonly timer: NodeJS.Timeout;
	/**
	 * The messages of each session being applied, in the order they came: one session's messages
	 * are applied one after the other (a steer sent before a tool result is in the run's queue
	 * before the result lets the run go on, as on the replica it was posted to).
	 */
	private readonly applying = new Map<string, Promise<void>>();

	constructor(private readonly options: ControlBusOptions) {
		const channel = controlChannel(options.prefix);
		const subscriber = options.redis.subscriber;
		subscriber.on("message", (from: string, message: string) => {
			if (from === channel) this.receive(message);
		});
		// Made once the replica connected: its first "ready" may be a reconnect.
		let connectedBefore = subscriber.status === "ready";
		subscriber.on("ready", () => {
			// Messages sent while the channel was away were lost to it.
			if (connectedBefore) void this.checkStoredAborts();
			connectedBefore = true;
		});
		this.timer = setInterval(() => {
			if (subscriber.status !== "ready") void this.checkStoredAborts();
		}, options.recheckMs);
		this.timer.unref();
	}

	/** Stops looking for stored aborts. */
	stop(): void {
		clearInterval(this.timer);
	}

	/** Aborts every run here whose abort is stored (it was posted elsewhere while the control channel was away). */
	private async checkStoredAborts(): Promise<void> {
		const { sessions, logger } = this.options;
		for (const session of [...sessions.liveSessions()]) {
			const runId = session.runId;
			if (!session.isBusy || runId === undefined) continue;
			try {
				if ((await abortRecorded(sessions.store, session.id, runId)) && session.runId === runId) {
					logger.info({ sessionId: session.id, runId }, "aborting a run whose abort was posted on another replica");
					session.abort();
				}
			} catch (err) {
				logger.warn({ err, sessionId: session.id }, "could not look for a stored abort; trying again later");
			}
		}
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
		const previous = this.applying.get(m.s) ?? Promise.resolve();
		const next = previous
			.then(() => this.apply(m))
			.then(
				() => undefined,
				(err: unknown) => this.options.logger.error({ err, control: m.t, sessionId: m.s }, "control message failed"),
			);
		this.applying.set(m.s, next);
		void next.then(() => {
			if (this.applying.get(m.s) === next) this.applying.delete(m.s);
		});
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
				const record = await session.readRecord();
				if (record) session.adoptConfig(record);
				return true;
			}
			case "pending": {
				const interactions = this.options.interactions();
				if (!interactions) return false;
				const stored = (await session.readPending()).find((p) => p.toolCallId === m.call && p.kind === m.kind);
				if (!stored?.resolution) return false;
				const value = JSON.parse(stored.resolution);
				if (m.kind === "approval") interactions.resolveApproval(session, m.call, value);
				else if (m.kind === "elicitation") interactions.resolveElicitation(session, m.call, value);
				else interactions.resolveToolResult(session, m.call, value);
				return true;
			}
		}
		return false;
	}
}
