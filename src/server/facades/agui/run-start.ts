/**
 * What a `RunAgentInput` does to its thread's session, decided before anything is streamed (a
 * refusal is an ordinary error answer):
 *
 * 1. No session yet: it is created from the conversation (system and developer messages its
 *    system prompt, the messages before the tail its transcript) and prompted with the tail's user
 *    messages, or continued from the tail's tool results.
 * 2. The tail answers the client tool calls the session's run waits for: the results go to that
 *    run, which goes on (the AG-UI run that returned the calls ended with them pending); user
 *    messages sent with them are steered into it. In cluster mode the run may wait on another
 *    replica: the results and steering go there through the session port (`remote`).
 * 3. The run waits for client tool results, but the tail has only new user messages: the client
 *    moved on, so the waiting run is aborted and the messages start the next one.
 * 4. Otherwise a new run: prompted with the tail's new user messages, or continued when there are
 *    none. The request's tools, system messages and `forwardedProps.wheelhouse` apply from it.
 *
 * `forwardedProps.wheelhouse.profile` names an agent profile (profiles.ts): its settings apply to
 * the thread's session on every run that names it, with the request's system messages after the
 * profile's system prompt; `model`, `thinkingLevel` and `tools` given beside it win over the
 * profile's.
 *
 * The tail's messages the session already holds (ours, or ones prompted before) are left out.
 *
 * 5. An idle session whose transcript the conversation leaves somewhere (the user edited an
 *    earlier message, or the client dropped the last answer): rewound there, the branch that
 *    followed kept as superseded, then the new messages prompted (divergence.ts).
 */
import type { Context as TraceContext } from "@opentelemetry/api";
import type { AgentMessage } from "../../../agent/types.js";
import type { Model, ToolResultMessage } from "../../../ai/types.js";
import type { SessionConfig } from "../../../store/types.js";
import { isToolPattern } from "../../../tools/selection.js";
import { apiError } from "../../http/errors.js";
import type { ModelCatalog } from "../../runtime/model-catalog.js";
import { type AgentProfiles, profileNamed, profileSettings } from "../../runtime/profiles.js";
import { type Admission, startAdmitted } from "../../runtime/session/admission.js";
import type { LiveSession } from "../../runtime/session/live-session.js";
import type { SessionManager } from "../../runtime/session/manager.js";
import type { SessionPort } from "../../runtime/session/port.js";
import type { RunHandle } from "../../runtime/session/runs.js";
import { toolCallsOf } from "../../runtime/session/tool-calls.js";
import type { ToolInteractions } from "../../runtime/session/tool-interactions.js";
import { deliverToolResults } from "../client-tool-results.js";
import { waitsElsewhere } from "../openai/remote-stretch.js";
import { type Divergence, divergenceOf } from "./divergence.js";
import { clientToolsOf, historyOf, type InputMessage, systemPromptOf, type Tail, tailOf } from "./input.js";
import { clientToolNames } from "./stream.js";
import type { Threads } from "./threads.js";
import { messageId } from "./transcript.js";

/** How long a request waits for the waiting run it abandons to end (its abort ends it at once here). */
const ABANDON_WAIT_MS = 10_000;
/** How many of the transcript's last messages are read for the tool calls a result may answer. */
const KNOWN_CALLS_WINDOW = 200;

/** The fields of `RunAgentInput` the facade reads (schemas.ts checked their shapes). */
export interface RunInput {
	threadId: string;
	runId: string;
	messages: InputMessage[];
	tools?: { name: string; description: string; parameters?: unknown }[];
	context?: { description: string; value: string }[];
	state?: unknown;
	forwardedProps?: { wheelhouse?: WheelhouseProps };
	/** The AG-UI protocol the client speaks (protocol.ts); absent for clients before 1.0. */
	protocolVersion?: string;
}

/** `forwardedProps.wheelhouse`. */
export interface WheelhouseProps {
	profile?: string;
	model?: string;
	thinkingLevel?: SessionConfig["thinkingLevel"];
	tools?: string[];
}

/** What every way a request's run begins has. */
interface BegunBase {
	/** The thread's session. */
	sessionId: string;
	/** The names of the session's client tools. */
	clientTools: Set<string>;
	/** The session's model (the run's usage is reported with it). */
	model(): { provider: string; id: string };
	/**
	 * Starts the run, or hands the results to the run that waits for them. Throws on refusal.
	 * `trace`: the request's trace context, the parent of a new run's spans.
	 */
	start(trace?: TraceContext, signal?: AbortSignal): Promise<RunHandle | undefined>;
	/** What must happen before the stretch is read (the waiting run the request abandons ends first). */
	prepare?(): Promise<void>;
	/** True when the run was under way (its turn is open). */
	resumed: boolean;
	/** The messages the client sent itself, which the stream does not echo. */
	sentByClient: Set<AgentMessage>;
	/** The client's ids of the messages it prompted with. */
	sentIds: string[];
}

/**
 * How the request's run begins: here, with the session in this process; or, when the run waits on
 * another replica (cluster mode), through the session port only (`remote`: no `LiveSession` is
 * built here; `start` only steers; the results go there and the stretch is read back,
 * openai/remote-stretch.ts).
 */
export type Begun =
	| (BegunBase & { session: LiveSession; remote?: undefined })
	| (BegunBase & { session?: undefined; remote: { port: SessionPort; results: ToolResultMessage[] } });

export interface RunStartDeps {
	sessions: SessionManager;
	catalog: ModelCatalog;
	profiles: AgentProfiles;
	interactions: ToolInteractions;
	threads: Threads;
	/** Fair admission: a new run past a run limit waits for a slot (in the request). */
	admission?: Admission;
}

/** The model of a session's stored config (`provider/id`), as its usage is reported. */
export function storedModel(catalog: ModelCatalog, spec: string): { provider: string; id: string } {
	const [provider = "", ...id] = spec.split("/");
	return catalog.resolve(spec) ?? { provider, id: id.join("/") };
}

export function createRunStart(deps: RunStartDeps): (ownerId: string | null, input: RunInput) => Promise<Begun> {
	const { sessions, catalog, profiles, interactions, threads } = deps;

	function resolveModel(spec: string): Model<any> {
		const problem = catalog.problem(spec);
		if (problem) throw apiError(problem.code, `body.forwardedProps.wheelhouse.model: ${problem.message}`);
		return catalog.resolve(spec) as Model<any>;
	}

	/** What a begun run in this process has of its session. */
	function local(session: LiveSession) {
		return {
			session,
			sessionId: session.id,
			clientTools: clientToolNames(session.config),
			model: () => session.model,
		};
	}

	/** A new run; `abandon`: the waiting run is aborted first (its end is not part of the new stretch). */
	function prompting(session: LiveSession, tail: Tail["prompt"], abandon = false): Begun {
		const messages = tail.map((entry) => entry.message);
		// Runs start and end through the session's port, as `/v1`'s do.
		const port = sessions.portOf(session);
		return {
			...local(session),
			...(abandon
				? {
						async prepare() {
							await port.abort();
							await port.runEnded(ABANDON_WAIT_MS);
						},
					}
				: {}),
			resumed: false,
			sentByClient: new Set(messages),
			sentIds: tail.map((entry) => entry.id),
			// Past a run limit under `admission: "queue"` the request waits for a slot (bounded).
			start: (trace, signal) =>
				admitted(session, signal, async () => {
					if (messages.length === 0) return port.continue({ trace });
					const result = await port.prompt(messages, "reject", { trace });
					return result.kind === "started" ? result.run : undefined;
				}),
		};
	}

	/** Starts a new run of `session` once admission gives it a slot (at once without admission). */
	function admitted(
		session: LiveSession,
		signal: AbortSignal | undefined,
		start: () => Promise<RunHandle | undefined>,
	): Promise<RunHandle | undefined> {
		return startAdmitted(
			deps.admission,
			{ sessionId: session.id, ownerId: session.ownerId, running: session.runId !== undefined },
			start,
			(run) => run,
			signal ? { signal } : {},
		);
	}

	/**
	 * A run from the point where the conversation leaves the transcript: an edited user message is
	 * the port's `edit` (one run: the cut, then the prompt); answers the client dropped are rewound
	 * (the cut is a run of its own), then the new messages are prompted, or the run continues.
	 */
	function editing(session: LiveSession, divergence: Divergence): Begun {
		const port = sessions.portOf(session);
		const messages = divergence.prompt.map((entry) => entry.message);
		return {
			...local(session),
			resumed: false,
			sentByClient: new Set(messages),
			sentIds: divergence.prompt.map((entry) => entry.id),
			start: (trace, signal) =>
				admitted(session, signal, async () => {
					const [first, ...rest] = messages;
					if (divergence.role === "user" && first) {
						const run = await port.edit(messageId(divergence.index), first, { trace });
						for (const message of rest) await port.enqueue("followUp", message);
						return run;
					}
					await port.rewind(messageId(divergence.index - 1));
					if (!first) return port.continue({ trace });
					const result = await port.prompt(messages, "reject", { trace });
					return result.kind === "started" ? result.run : undefined;
				}),
		};
	}

	function resuming(session: LiveSession, results: ToolResultMessage[], steer: Tail["prompt"]): Begun {
		return {
			...local(session),
			resumed: true,
			sentByClient: new Set(steer.map((entry) => entry.message)),
			sentIds: steer.map((entry) => entry.id),
			async start() {
				const runId = session.runId;
				const port = sessions.portOf(session);
				for (const entry of steer) await port.enqueue("steer", entry.message);
				deliverToolResults(interactions, session, results, { instead: "send a new message instead" });
				const run = runId ? session.activeRunHandle(runId) : undefined;
				if (!run) throw apiError("TOOL_CALL_FINISHED", "The run that waited for these results is over.");
				return run;
			},
		};
	}

	/** Resumes the run that waits on another replica: `start` steers the tail's user messages there. */
	function resumingElsewhere(port: SessionPort, results: ToolResultMessage[], steer: Tail["prompt"]): Begun {
		const { record } = port;
		return {
			sessionId: port.id,
			clientTools: new Set(record.clientTools.map((tool) => tool.name)),
			model: () => storedModel(catalog, record.model),
			resumed: true,
			sentByClient: new Set(steer.map((entry) => entry.message)),
			sentIds: steer.map((entry) => entry.id),
			remote: { port, results },
			async start() {
				for (const entry of steer) await port.enqueue("steer", entry.message);
				return undefined;
			},
		};
	}

	/**
	 * A request for a session whose run goes on on another replica, decided through its port (no
	 * `LiveSession` is built here): tool results go to the run that waits for them; user messages
	 * while it waits abandon it (aborted, then undefined: the new run starts here); anything else
	 * is `AGENT_BUSY`, as on the replica running it.
	 */
	async function runningElsewhere(port: SessionPort, input: RunInput): Promise<Begun | undefined> {
		const total = port.record.messageCount;
		const { messages } = await port.messages(Math.max(0, total - KNOWN_CALLS_WINDOW), KNOWN_CALLS_WINDOW);
		const tail = tailOf(input.messages, toolCallsOf(messages));
		const held = await threads.held(
			port.id,
			total,
			[...tail.prompt, ...tail.toolResults].map((entry) => entry.id),
		);
		const prompt = tail.prompt.filter((entry) => !held.has(entry.id));
		const results = tail.toolResults.filter((entry) => !held.has(entry.id)).map((entry) => entry.message);
		if (results.length > 0) {
			if (await waitsElsewhere(port, results)) return resumingElsewhere(port, results, prompt);
			throw apiError(
				"TOOL_CALL_FINISHED",
				`body.messages: no run waits for the result of ${results.map((r) => `"${r.toolCallId}"`).join(", ")} any more (it timed out, was aborted, or the server restarted); send a new message instead.`,
			);
		}
		const waiting = await port.waitingToolCalls();
		if (waiting.length > 0 && prompt.length > 0) {
			wanted(input); // a refusal of the request's settings comes before the abort
			await port.abort();
			await port.runEnded(ABANDON_WAIT_MS);
			return undefined;
		}
		if (waiting.length > 0) {
			throw apiError(
				"AGENT_BUSY",
				`The thread's run waits for the results of the tool calls ${waiting.map((id) => `"${id}"`).join(", ")}: send a tool message for each.`,
			);
		}
		throw apiError(
			"AGENT_BUSY",
			`The thread's session ${port.id} is running; wait for its run to end (or steer it with POST /v1/sessions/${port.id}/steer).`,
		);
	}

	/**
	 * The session settings the request asks for: its profile's (system messages after the profile's
	 * prompt), then the request's own. Without a profile, the system prompt only when the request has
	 * system messages.
	 */
	function wanted(input: RunInput): Partial<SessionConfig> {
		const props = input.forwardedProps?.wheelhouse ?? {};
		if (props.model !== undefined) resolveModel(props.model);
		const unknown = (props.tools ?? []).filter((name) => !isToolPattern(name) && !sessions.tools.has(name));
		if (unknown.length > 0) {
			throw apiError(
				"UNKNOWN_TOOL",
				`body.forwardedProps.wheelhouse.tools: unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.map((n) => `"${n}"`).join(", ")}; see GET /v1/tools.`,
				{ unknown },
			);
		}
		const system = systemPromptOf(input.messages);
		const field = "body.forwardedProps.wheelhouse.profile";
		return {
			...(props.profile !== undefined
				? profileSettings(props.profile, profileNamed(profiles, props.profile, field), system)
				: system !== undefined
					? { systemPrompt: system }
					: {}),
			...(props.model !== undefined ? { model: props.model } : {}),
			...(props.thinkingLevel !== undefined ? { thinkingLevel: props.thinkingLevel } : {}),
			...(props.tools !== undefined ? { tools: props.tools } : {}),
			clientTools: clientToolsOf(input.tools, sessions.tools.keys()),
		};
	}

	/** The session settings the request asks for that differ from the session's. */
	function changes(session: LiveSession, input: RunInput): Partial<SessionConfig> {
		const config = session.config as unknown as Record<string, unknown>;
		const settings: Record<string, unknown> = wanted(input);
		// A profile's metadata adds to the session's (which holds the thread's state).
		if (settings.metadata) settings.metadata = { ...session.config.metadata, ...settings.metadata };
		const patch: Record<string, unknown> = {};
		for (const [key, value] of Object.entries(settings)) {
			if (JSON.stringify(value) !== JSON.stringify(config[key])) patch[key] = value;
		}
		return patch as Partial<SessionConfig>;
	}

	async function applyChanges(session: LiveSession, input: RunInput): Promise<void> {
		const patch = changes(session, input);
		if (Object.keys(patch).length > 0) await sessions.update(session, patch);
	}

	async function createThread(ownerId: string | null, input: RunInput): Promise<Begun> {
		const settings = wanted(input);
		const model = resolveModel(settings.model ?? sessions.defaultModel);
		const tail = tailOf(input.messages, new Map());
		if (tail.prompt.length === 0 && tail.toolResults.length === 0) {
			throw apiError(
				"VALIDATION_FAILED",
				"body.messages: a new thread's conversation must end with a user message or with tool results.",
			);
		}
		const history = historyOf(input.messages, tail.start, model);
		const session = await threads.create(ownerId, input.threadId, {
			...settings,
			messages: [...history, ...tail.toolResults.map((entry) => entry.message)],
			metadata: { ...settings.metadata, facade: "agui", "agui.threadId": input.threadId },
		});
		if (!session) {
			throw apiError("THREAD_NOT_FOUND", `body.threadId: no session "${input.threadId}" exists for this API key.`);
		}
		return prompting(session, tail.prompt);
	}

	return async function begin(ownerId, input) {
		const port = await threads.open(ownerId, input.threadId);
		if (!port) return createThread(ownerId, input);
		if (port.where === "remote" && port.record.status === "running") {
			const elsewhere = await runningElsewhere(port, input);
			if (elsewhere) return elsewhere;
		}
		// The run is here, or starts here.
		const session = await threads.find(ownerId, input.threadId);
		if (!session) return createThread(ownerId, input);
		const calls = toolCallsOf(session.messages);
		const tail = tailOf(input.messages, calls);
		const held = await threads.held(
			session.id,
			session.messageCount,
			[...tail.prompt, ...tail.toolResults].map((entry) => entry.id),
		);
		const prompt = tail.prompt.filter((entry) => !held.has(entry.id));
		// Results the session holds are ours (server tools); a client's result for a call that has one came too late.
		const results = tail.toolResults.filter((entry) => !held.has(entry.id)).map((entry) => entry.message);
		const waiting = interactions.pending(session).filter((p) => p.kind === "client_tool" && !p.orphaned);

		if (results.length > 0) {
			if (waiting.length === 0) {
				// The run may have moved to another replica since the port was opened.
				const now = await sessions.open(session.id, ownerId);
				if (await waitsElsewhere(now, results)) return resumingElsewhere(now, results, prompt);
			}
			const waited = new Set(waiting.map((p) => p.toolCallId));
			const stale = results.filter((result) => !waited.has(result.toolCallId));
			if (stale.length > 0) {
				throw apiError(
					"TOOL_CALL_FINISHED",
					`body.messages: no run waits for the result of ${stale.map((r) => `"${r.toolCallId}"`).join(", ")} any more (it timed out, was aborted, or the server restarted); send a new message instead.`,
				);
			}
			const answering = new Set(results.map((result) => result.toolCallId));
			const missing = waiting.filter((p) => !answering.has(p.toolCallId)).map((p) => `"${p.toolCallId}"`);
			if (missing.length > 0) {
				throw apiError(
					"VALIDATION_FAILED",
					`body.messages: the run waits for the results of every tool call it made: add tool messages for ${missing.join(", ")}.`,
				);
			}
			return resuming(session, results, prompt);
		}
		if (waiting.length > 0) {
			if (prompt.length === 0) {
				throw apiError(
					"AGENT_BUSY",
					`The thread's run waits for the results of the tool calls ${waiting.map((p) => `"${p.toolCallId}"`).join(", ")}: send a tool message for each.`,
				);
			}
			await applyChanges(session, input);
			return prompting(session, prompt, true);
		}
		if (session.isBusy) {
			throw apiError(
				"AGENT_BUSY",
				`The thread's session ${session.id} is running; wait for its run to end (or steer it with POST /v1/sessions/${session.id}/steer).`,
			);
		}
		// An edited history: the session is rewound where the conversation leaves it (divergence.ts).
		const divergence = await divergenceOf(session, input.messages, tail);
		await applyChanges(session, input);
		return divergence ? editing(session, divergence) : prompting(session, prompt);
	};
}
