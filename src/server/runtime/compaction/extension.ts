/**
 * The session extension of compaction and budgets: gives every session (created or loaded) its
 * {@link SessionCompaction}, refuses runs on a spent budget (the session's, its key's, its
 * tenant's: the tenant's spending read from the store before each run), and adds `compaction` and
 * the budgets to the session state. One per app: the per-session controllers live in its own map.
 */
import { keyBudgetError, tenantBudgetError } from "../budgets/spent.js";
import { sessionError } from "../session/errors.js";
import type { LiveSession, SessionExtension } from "../session/live-session.js";
import { SessionCompaction, type SessionCompactionOptions } from "./session-compaction.js";

export interface CompactionExtension extends SessionExtension {
	/** The controller of a live session (undefined only for a session built before the extension was added). */
	of(session: LiveSession): SessionCompaction | undefined;
}

/** `options` are each session's {@link SessionCompaction}'s, passed on as they are. */
export function compactionExtension(options: SessionCompactionOptions): CompactionExtension {
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
			await options.tenantBudgets?.refresh(session.sharing.tenant);
		},
		prepareRun(session) {
			// The tenant's spending, every replica's, as the store has it now.
			return options.tenantBudgets?.refresh(session.sharing.tenant);
		},
		beforeRun(session, kind) {
			const controller = controllers.get(session);
			if (!controller) return;
			const limit = controller.sessionLimit();
			if (limit) {
				throw sessionError("BUDGET_EXHAUSTED", limit.message, { limit: limit.limit, max: limit.max, used: limit.used });
			}
			const keyLimit = options.keyBudgets?.keyLimit(session.ownerId);
			if (keyLimit) throw keyBudgetError(keyLimit);
			const tenantLimit = options.tenantBudgets?.limit(session.sharing.tenant);
			if (tenantLimit) throw tenantBudgetError(session.sharing.tenant, tenantLimit);
			const problem = kind === "continue" ? controller.continueProblem() : undefined;
			if (problem) throw sessionError("CANNOT_CONTINUE_FROM_ASSISTANT", problem);
		},
		onEvent(session, event) {
			if (event.type === "agent_start" || event.type === "agent_end") {
				controllers.get(session)?.onRun(event.type === "agent_start");
			}
			if (event.type === "message_end" && event.message.role === "assistant") {
				options.keyBudgets?.add(session.ownerId, event.message.usage);
				options.tenantBudgets?.add(session.sharing.tenant, event.message.usage);
			}
		},
		state(session) {
			const state: Record<string, unknown> = controllers.get(session)?.state() ?? {};
			if (options.keyBudgets) state.keyBudget = options.keyBudgets.state(session.ownerId);
			if (options.tenantBudgets?.enabled) state.tenantBudget = options.tenantBudgets.state(session.sharing.tenant);
			return state;
		},
	};
}
