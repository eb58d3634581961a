/**
 * What a `RunAgentInput` does to its thread's session, decided before anything is streamed (a
 * refusal is an ordinary error answer):
 *
 * 1. No session yet: it is created from the conversation (system and developer messages its
 *    system prompt, the messages before the tail its transcript) and prompted with the tail's user
 *    messages, or continued from the tail's tool results.
 * 2. The tail answers the client tool calls the session's run waits for: the results go to that
 *    run, which goes on (the AG-UI run that returned the calls ended with them pending); user
 *    messages sent with them are steered into it.
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
 */
import type { Context as TraceContext } from "@opentelemetry/api";
import type { AgentMessage } from "../../../agent/types.js";
import type { Model, ToolResultMessage } from "../../../ai/types.js";
import type { SessionConfig } from "../../../store/types.js";
import { isToolPattern } from "../../../tools/selection.js";
import { apiError } from "../../errors.js";
import type { ModelCatalog } from "../../model-catalog.js";
import { type AgentProfiles, profileNamed, profileSettings } from "../../profiles.js";
import type { LiveSession } from "../../session/live-session.js";
import type { SessionManager } from "../../session/manager.js";
import type { RunHandle } from "../../session/runs.js";
import type { ToolInteractions } from "../../session/tool-interactions.js";
import { deliverToolResults } from "../client-tool-results.js";
import { clientToolsOf, historyOf, type InputMessage, systemPromptOf, type Tail, tailOf } from "./input.js";
import type { Threads } from "./threads.js";

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

/** How the request's run begins. */
export interface Begun {
	session: LiveSession;
	/**
	 * Starts the run, or hands the results to the run that waits for them. Throws on refusal.
	 * `trace`: the request's trace context, the parent of a new run's spans.
	 */
	start(trace?: TraceContext): Promise<RunHandle | undefined>;
	/** What must happen before the stretch is read (the waiting run the request abandons ends first). */
	prepare?(): Promise<void>;
	/** True when the run was under way (its turn is open). */
	resumed: boolean;
	/** The messages the client sent itself, which the stream does not echo. */
	sentByClient: Set<AgentMessage>;
	/** The client's ids of the messages it prompted with. */
	sentIds: string[];
}

export interface RunStartDeps {
	sessions: SessionManager;
	catalog: ModelCatalog;
	profiles: AgentProfiles;
	interactions: ToolInteractions;
	threads: Threads;
}

/** Tool call ids of a transcript with their tool names. */
function callsOf(messages: readonly AgentMessage[]): Map<string, string> {
	const calls = new Map<string, string>();
	for (const message of messages as readonly { role?: string; content?: unknown }[]) {
		if (message.role !== "assistant" || !Array.isArray(message.content)) continue;
		for (const block of message.content as { type: string; id?: string; name?: string }[]) {
			if (block.type === "toolCall" && block.id && block.name) calls.set(block.id, block.name);
		}
	}
	return calls;
}

export function createRunStart(deps: RunStartDeps): (ownerId: string | null, input: RunInput) => Promise<Begun> {
	const { sessions, catalog, profiles, interactions, threads } = deps;

	function resolveModel(spec: string): Model<any> {
		const problem = catalog.problem(spec);
		if (problem) throw apiError(problem.code, `body.forwardedProps.wheelhouse.model: ${problem.message}`);
		return catalog.resolve(spec) as Model<any>;
	}

	/** A new run; `abandon`: the waiting run is aborted first (its end is not part of the new stretch). */
	function prompting(session: LiveSession, tail: Tail["prompt"], abandon = false): Begun {
		const messages = tail.map((entry) => entry.message);
		return {
			session,
			...(abandon
				? {
						async prepare() {
							session.abort();
							await session.waitForIdle();
						},
					}
				: {}),
			resumed: false,
			sentByClient: new Set(messages),
			sentIds: tail.map((entry) => entry.id),
			async start(trace) {
				if (messages.length === 0) return session.continue({ trace });
				const result = await session.prompt(messages, "reject", { trace });
				return result.kind === "started" ? result.run : undefined;
			},
		};
	}

	function resuming(session: LiveSession, results: ToolResultMessage[], steer: Tail["prompt"]): Begun {
		return {
			session,
			resumed: true,
			sentByClient: new Set(steer.map((entry) => entry.message)),
			sentIds: steer.map((entry) => entry.id),
			async start() {
				const runId = session.runId;
				for (const entry of steer) await session.enqueue("steer", entry.message);
				deliverToolResults(interactions, session, results, { instead: "send a new message instead" });
				const run = runId ? session.activeRunHandle(runId) : undefined;
				if (!run) throw apiError("TOOL_CALL_FINISHED", "The run that waited for these results is over.");
				return run;
			},
		};
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
		const session = await threads.find(ownerId, input.threadId);
		if (!session) return createThread(ownerId, input);
		const calls = callsOf(session.agent.state.messages);
		const tail = tailOf(input.messages, calls);
		const held = await threads.held(
			session,
			[...tail.prompt, ...tail.toolResults].map((entry) => entry.id),
		);
		const prompt = tail.prompt.filter((entry) => !held.has(entry.id));
		// Results the session holds are ours (server tools); a client's result for a call that has one came too late.
		const results = tail.toolResults.filter((entry) => !held.has(entry.id)).map((entry) => entry.message);
		const waiting = interactions.pending(session).filter((p) => p.kind === "client_tool" && !p.orphaned);

		if (results.length > 0) {
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
		await applyChanges(session, input);
		return prompting(session, prompt);
	};
}
