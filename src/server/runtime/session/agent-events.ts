/**
 * The listener a session installs on its Agent: it stores what each AgentEvent completes, then
 * publishes the event on the session's log, whose observers (`observers.ts`: streams, facades,
 * extensions, cluster fan-out) get it from there. It is the Agent's only listener.
 *
 * ## Persist, then publish
 *
 * Every AgentEvent is serialised once, inside the Agent listener (the agent mutates its partial
 * message after the listener returns), and appended to the log, which assigns the next id and
 * hands the frame to every subscriber. What the event completes (a message at its `message_end`,
 * the run at its `agent_end`, a drained queued message at its `message_start`) is written to the
 * store first: no client sees a message or a run end that a crash could take back. Messages and
 * run ends go to the store's working set, synchronously; the app's write passes await the store's
 * barrier before any SSE byte leaves. Moving a drained message out of the stored queue is a
 * durable write: the listener awaits it (the Agent awaits its listeners) before publishing.
 */
import type { FastifyBaseLogger } from "fastify";
import type { Agent } from "../../../agent/agent.js";
import type { AgentEvent, AgentMessage } from "../../../agent/types.js";
import type { AssistantMessage } from "../../../ai/types.js";
import { encodeWireData } from "../../../wire/events.js";
import type { SessionEventLog } from "./event-log.js";
import type { SessionQueues } from "./queues.js";
import type { ActiveRun, SessionRuns } from "./runs.js";
import type { StoredTranscript } from "./transcript.js";

/** The parts of a session the listener stores to and publishes on. */
export interface AgentEventParts {
	sessionId: string;
	agent: Agent;
	events: SessionEventLog;
	runs: SessionRuns;
	queues: SessionQueues;
	transcript: StoredTranscript;
	logger: FastifyBaseLogger;
}

export class AgentEventRecorder {
	constructor(private readonly parts: AgentEventParts) {}

	/**
	 * Stores what `event` completes, then publishes it. Synchronous unless storing is a durable write
	 * (a drained queued message): then it returns the promise the Agent awaits before its next event.
	 */
	onAgentEvent(event: AgentEvent): Promise<void> | undefined {
		const run = this.parts.runs.active;
		try {
			const storing = this.storeCompleted(event, run);
			if (storing) {
				return storing.then(
					() => this.publishEvent(event, run),
					(err: unknown) => this.eventFailed(err, event),
				);
			}
			this.publishEvent(event, run);
		} catch (err) {
			this.eventFailed(err, event);
		}
		return undefined;
	}

	/**
	 * What the event completes is stored before any subscriber gets the event (a stream that ends at
	 * agent_end writes at once, after the store's barrier): no client sees a message or a run end
	 * that a crash could take back. A promise when that is a durable write to await.
	 */
	private storeCompleted(event: AgentEvent, run: ActiveRun | undefined): Promise<void> | undefined {
		const { runs, transcript, agent } = this.parts;
		switch (event.type) {
			case "message_start":
				return this.noteDrained(event.message);
			case "message_end": {
				const stored = transcript.messageEnded(event.message);
				if (run && event.message.role === "assistant") {
					runs.noteAssistant(run, event.message as AssistantMessage);
				}
				return stored;
			}
			case "agent_end":
				transcript.runEnded(agent.state.messages);
				if (run) runs.end(run);
				return undefined;
		}
		return undefined;
	}

	/** Logs the event, which hands it to the session's observers. */
	private publishEvent(event: AgentEvent, run: ActiveRun | undefined): void {
		try {
			const id = this.parts.events.append(event.type, encodeWireData(event), this.parts.runs.currentSeq, event);
			if (run && id !== undefined) run.resolveFirst(id);
		} catch (err) {
			this.eventFailed(err, event);
		}
	}

	/** Never let persistence or fan-out trouble break the run: the Agent awaits this listener. */
	private eventFailed(err: unknown, event: AgentEvent): void {
		this.parts.logger.error(
			{ err, sessionId: this.parts.sessionId, event: event.type },
			"failed to record an agent event",
		);
	}

	/**
	 * A queued message the loop just started is moved from the stored queue into the stored
	 * transcript (durably), then announced; undefined for any other message.
	 */
	private noteDrained(message: AgentMessage): Promise<void> | undefined {
		const { queues, transcript } = this.parts;
		const entry = queues.takeDrained(message);
		if (!entry) return undefined;
		return transcript.storeDrained(message, entry.id).then(() => queues.publishDrained(entry));
	}
}
