/**
 * Which session extensions an agent event is handed to. A streamed delta (`message_update`) is by
 * far the most frequent event, and most extensions need none of them: each extension names the
 * event types it wants (`SessionExtension.events`), and this table, built once per change of the
 * extension list, gives every type the extensions that asked for it, in registration order.
 * `ExtensionObserver` is the session's observer (`observers.ts`) that hands them their events.
 */
import type { FastifyBaseLogger } from "fastify";
import type { AgentEvent } from "../../../agent/types.js";
import type { SessionEvent, SessionObserver } from "./observers.js";

type EventType = AgentEvent["type"];

/** The part of a `SessionExtension` (live-session.ts) the table reads. */
export interface EventHooks {
	onEvent?: unknown;
	onFirstUpdate?: unknown;
	events?: readonly EventType[];
}

export class ExtensionEventTable<E extends EventHooks> {
	private readonly byType = new Map<EventType, E[]>();
	/** Extensions without `events`: they see every type, including ones added to AgentEvent later. */
	private readonly everything: E[] = [];
	private readonly firstUpdate: E[] = [];

	constructor(extensions: readonly E[]) {
		for (const ext of extensions) {
			if (ext.onFirstUpdate) this.firstUpdate.push(ext);
			if (!ext.onEvent) continue;
			if (!ext.events) {
				this.everything.push(ext);
				for (const list of this.byType.values()) list.push(ext);
				continue;
			}
			for (const type of new Set(ext.events)) {
				let list = this.byType.get(type);
				if (!list) {
					list = [...this.everything];
					this.byType.set(type, list);
				}
				list.push(ext);
			}
		}
	}

	/** The extensions whose `onEvent` takes events of `type`. */
	forType(type: EventType): readonly E[] {
		return this.byType.get(type) ?? this.everything;
	}

	/** The extensions with an `onFirstUpdate` hook. */
	get firstUpdateHooks(): readonly E[] {
		return this.firstUpdate;
	}
}

/** The hooks `ExtensionObserver` calls, with the session they are called with. */
interface ObservingExtension<S> extends EventHooks {
	name: string;
	onEvent?(session: S, event: AgentEvent): void;
	onFirstUpdate?(session: S, event: AgentEvent & { type: "message_update" }): void;
}

/**
 * Hands a session's agent events, once logged, to the extensions that take their type, and the
 * first update of each message to `onFirstUpdate`. An agent event the log could not store goes
 * to them too (their runs still end). A throw is logged and stops no other extension.
 */
export class ExtensionObserver<S, E extends ObservingExtension<S>> implements SessionObserver {
	/** A message started and no `message_update` of it was handed to the extensions yet. */
	private firstUpdatePending = false;

	constructor(
		private readonly session: S & { id: string },
		private readonly table: () => ExtensionEventTable<E>,
		private readonly logger: FastifyBaseLogger,
	) {}

	event(event: SessionEvent): void {
		if (event.agent) this.hand(event.agent);
	}

	unlogged(event: AgentEvent): void {
		this.hand(event);
	}

	private hand(event: AgentEvent): void {
		const table = this.table();
		for (const ext of table.forType(event.type)) {
			try {
				ext.onEvent?.(this.session, event);
			} catch (err) {
				this.failed(err, ext, "onEvent");
			}
		}
		if (event.type === "message_start" || event.type === "message_end") {
			this.firstUpdatePending = event.type === "message_start";
		} else if (event.type === "message_update" && this.firstUpdatePending) {
			this.firstUpdatePending = false;
			for (const ext of table.firstUpdateHooks) {
				try {
					ext.onFirstUpdate?.(this.session, event);
				} catch (err) {
					this.failed(err, ext, "onFirstUpdate");
				}
			}
		}
	}

	private failed(err: unknown, ext: E, hook: string): void {
		this.logger.error({ err, extension: ext.name, sessionId: this.session.id }, `extension ${hook}() failed`);
	}
}
