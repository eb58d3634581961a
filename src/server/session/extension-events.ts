/**
 * Which session extensions an agent event is handed to. A streamed delta (`message_update`) is by
 * far the most frequent event, and most extensions need none of them: each extension names the
 * event types it wants (`SessionExtension.events`), and this table, built once per change of the
 * extension list, gives every type the extensions that asked for it, in registration order.
 */
import type { AgentEvent } from "../../agent/types.js";

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
