/**
 * The session extension of compaction and budgets: gives every session (created or loaded) its
 * {@link SessionCompaction}, refuses runs on a spent budget, and adds `compaction` and `budget` to
 * the session state. One per app: the per-session controllers live in its own map.
 */
import type { FastifyBaseLogger } from "fastify";
import type { KeyBudgets } from "../budgets/key-budgets.js";
import { apiError } from "../errors.js";
import type { WatchModelCall } from "../model-call-metrics.js";
import type { LiveSession, SessionExtension } from "../session/live-session.js";
import { SessionCompaction } from "./session-compaction.js";
import type { CompactionDefaults } from "./settings.js";

export interface CompactionExtensionOptions {
	defaults: CompactionDefaults;
	providerIdleTimeoutMs?: number;
	logger: FastifyBaseLogger;
	keyBudgets?: KeyBudgets;
	/** Notes the summary calls in the model metrics (absent: metrics off). */
	watchModelCall?: WatchModelCall;
}

export interface CompactionExtension extends SessionExtension {
	/** The controller of a live session (undefined only for a session built before the extension was added). */
	of(session: LiveSession): SessionCompaction | undefined;
}

export function compactionExtension(options: CompactionExtensionOptions): CompactionExtension {
	const controllers = new WeakMap<LiveSession, SessionCompaction>();
	return {
		name: "compaction",
		of: (session) => controllers.get(session),
		events: ["agent_start", "agent_end", "message_end"],
		attach(session) {
			if (!controllers.has(session)) controllers.set(session, new SessionCompaction(session, options));
		},
		async load(session) {
			await options.keyBudgets?.load(session.ownerId);
		},
		beforeRun(session, kind) {
			const controller = controllers.get(session);
			if (!controller) return;
			const limit = controller.sessionLimit();
			if (limit) {
				throw apiError("BUDGET_EXHAUSTED", limit.message, { limit: limit.limit, max: limit.max, used: limit.used });
			}
			const keyLimit = options.keyBudgets?.keyLimit(session.ownerId);
			if (keyLimit) {
				throw apiError("KEY_BUDGET_EXHAUSTED", keyLimit.message, {
					limit: keyLimit.limit,
					max: keyLimit.max,
					used: keyLimit.used,
				});
			}
			const problem = kind === "continue" ? controller.continueProblem() : undefined;
			if (problem) throw apiError("CANNOT_CONTINUE_FROM_ASSISTANT", problem);
		},
		onEvent(session, event) {
			if (event.type === "agent_start" || event.type === "agent_end") {
				controllers.get(session)?.onRun(event.type === "agent_start");
			}
			if (event.type === "message_end" && event.message.role === "assistant") {
				options.keyBudgets?.add(session.ownerId, event.message.usage);
			}
		},
		state(session) {
			const state = controllers.get(session)?.state() ?? {};
			return options.keyBudgets ? { ...state, keyBudget: options.keyBudgets.state(session.ownerId) } : state;
		},
	};
}
