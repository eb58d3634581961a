/**
 * Compaction and budgets of one live session, installed on its Agent through the contract's own
 * hooks (the loop itself is untouched):
 *
 * - `transformContext` (before each model call): gives the model the view of the latest compaction
 *   (summary + kept messages), and compacts first when that view has more tokens than the
 *   threshold (`reason: "threshold"`);
 * - `convertToLlm`: turns the compaction message into the summary the model reads;
 * - `streamFn`: refuses the call when a budget limit is reached (the run then ends with a message
 *   that names the limit), counts the run's model calls, and on a context-overflow error compacts
 *   and sends the call once more (`reason: "overflow"`).
 *
 * A compaction asks the session's own model for the summary, appends the compaction message to
 * the transcript (store and Agent) in one write, and announces itself with `compaction_start` /
 * `compaction_end`. When the summary call fails nothing changes: the call goes on with the full
 * context, and `compaction_end` and the state say why.
 */
import type { FastifyBaseLogger } from "fastify";
import type { AgentMessage, StreamFn } from "../../../agent/types.js";
import { errorStream } from "../../../ai/stream.js";
import type { Context, Model, SimpleStreamOptions } from "../../../ai/types.js";
import type { CompactionEndEvent, CompactionStartEvent } from "../../../wire/events.js";
import type { WatchModelCall } from "../../observability/model-call-metrics.js";
import type { KeyBudgets } from "../budgets/key-budgets.js";
import type { TenantBudgets } from "../budgets/tenant-budgets.js";
import type { LiveSession } from "../session/live-session.js";
import { budgetState, callLimitReached, sessionLimitReached } from "./budget.js";
import { chooseCut } from "./cut.js";
import { relayWithOverflowRetry } from "./overflow-retry.js";
import { type CompactionDefaults, type CompactionInForce, settingsInForce } from "./settings.js";
import { requestSummary, summaryPrompt } from "./summarize.js";
import { ContextMeter, estimateTokens } from "./tokens.js";
import { type CompactionMessage, type CompactionReason, isCompaction } from "./types.js";
import { type Anchor, anchorOf, type ContextView, convertWithSummaries, lastIndexOf, viewOf } from "./view.js";

export interface SessionCompactionOptions {
	defaults: CompactionDefaults;
	/** Idle timeout of the summary call when the model sets none (the server's provider idle timeout). */
	providerIdleTimeoutMs?: number;
	logger: FastifyBaseLogger;
	/** The per-API-key budgets: checked before each model call with the session's own. */
	keyBudgets?: KeyBudgets;
	/** The per-tenant budgets: checked before each model call too, as last read and added to. */
	tenantBudgets?: TenantBudgets;
	/** Notes the summary calls in the model metrics (absent: metrics off). */
	watchModelCall?: WatchModelCall;
}

/** What one compaction came to. */
export type CompactionResult =
	| { kind: "compacted"; message: CompactionMessage; messageIndex: number; view: ContextView }
	| { kind: "nothing" }
	| { kind: "failed"; errorMessage: string; aborted: boolean };

interface CompactionRequest {
	reason: CompactionReason;
	view: ContextView;
	tokensBefore: number;
	keepTokens: number;
	signal: AbortSignal | undefined;
	instructions?: string;
}

/** The part of the window the summary request may fill with conversation text, in characters. */
function promptBudgetChars(model: Model<any>, summaryTokens: number, previous: CompactionMessage | undefined): number {
	const window = model.contextWindow > 0 ? model.contextWindow : 128_000;
	const reserved = summaryTokens + 1_000 + (previous ? estimateTokens(previous) : 0);
	return Math.max(4_000, (window - reserved) * 4);
}

export class SessionCompaction {
	private anchor: Anchor | undefined;
	private readonly meter = new ContextMeter();
	/** The view of the current model call (made by `transformContext`), for a retry after an overflow. */
	private currentView: ContextView | undefined;
	private compacting: CompactionReason | undefined;
	private lastError: { at: number; reason: CompactionReason; message: string } | undefined;
	/** Model calls of the active run; null between runs. */
	private turns: number | null = null;
	/** A threshold compaction failed in this run: do not pay for another attempt before every call. */
	private thresholdFailed = false;

	constructor(
		private readonly session: LiveSession,
		private readonly options: SessionCompactionOptions,
	) {
		this.anchor = anchorOf(session.messages, session.transcriptBase);
		session.useModelCallLayer("budget", {
			convertToLlm: convertWithSummaries,
			transformContext: () => (messages, signal) => this.transformContext(messages, signal),
			stream: (inner) => (model, context, streamOptions) => this.stream(inner, model, context, streamOptions),
		});
	}

	/** A run started (`agent_start`) or ended (`agent_end`). */
	onRun(started: boolean): void {
		this.turns = started ? 0 : null;
		this.thresholdFailed = false;
	}

	private settings(): CompactionInForce {
		return settingsInForce(this.session.config, this.options.defaults, this.session.model);
	}

	/** The limit the next model call would pass, if any. */
	private limitReached() {
		return (
			callLimitReached(this.session.config.budget, this.session.usage, this.turns ?? 0) ??
			this.options.keyBudgets?.callLimit(this.session.ownerId, this.turns ?? 0) ??
			this.options.tenantBudgets?.limit(this.session.sharing.tenant)
		);
	}

	/** The session-wide limit its usage has reached, if any (a prompt is refused then). */
	sessionLimit() {
		return sessionLimitReached(this.session.config.budget, this.session.usage);
	}

	// --- the Agent's hooks ----------------------------------------------------------------------

	/** The context transform of each model call (public for the bench that times it). */
	async transformContext(messages: AgentMessage[], signal?: AbortSignal): Promise<AgentMessage[]> {
		try {
			const view = this.viewOf(messages);
			this.currentView = view;
			const settings = this.settings();
			if (!settings.enabled || settings.thresholdTokens <= 0 || this.thresholdFailed || this.limitReached()) {
				return view.messages;
			}
			const tokens = this.meter.measure(view.messages, view.trustFrom);
			if (tokens <= settings.thresholdTokens) return view.messages;
			const result = await this.compact({
				reason: "threshold",
				view,
				tokensBefore: tokens,
				keepTokens: settings.keepTokens,
				signal,
			});
			if (result.kind === "compacted") {
				this.currentView = result.view;
				return result.view.messages;
			}
			if (result.kind === "failed") this.thresholdFailed = true;
			return view.messages;
		} catch (err) {
			// The hook must not throw: the call goes on with the context as it is.
			this.options.logger.error({ err, sessionId: this.session.id }, "compaction before a model call failed");
			return messages;
		}
	}

	private stream(
		inner: StreamFn,
		model: Model<any>,
		context: Context,
		options?: SimpleStreamOptions,
	): ReturnType<StreamFn> {
		const limit = this.limitReached();
		if (limit) return errorStream(this.session.model, limit.message);
		if (this.turns !== null) this.turns++;
		const first = inner(model, context, options);
		if (!this.settings().enabled) return first;
		return relayWithOverflowRetry(first, {
			model: this.session.model,
			allowed: () => options?.signal?.aborted !== true,
			retry: async () => {
				const view = await this.compactAfterOverflow(options?.signal);
				return view && inner(model, { ...context, messages: convertWithSummaries(view) }, options);
			},
			onError: (err) => this.options.logger.error({ err, sessionId: this.session.id }, "overflow retry failed"),
		});
	}

	/** Compacts the current call's view after the provider said it overflowed; the new view, or undefined. */
	private async compactAfterOverflow(signal: AbortSignal | undefined): Promise<AgentMessage[] | undefined> {
		const view = this.currentView;
		if (!view) return undefined;
		const tokensBefore = this.meter.measure(view.messages, view.trustFrom);
		const result = await this.compact({
			reason: "overflow",
			view,
			tokensBefore,
			// The estimate was too low for this model's tokenizer: keep at most half of it.
			keepTokens: Math.min(this.settings().keepTokens, Math.floor(tokensBefore / 2)),
			signal,
		});
		return result.kind === "compacted" ? result.view.messages : undefined;
	}

	private viewOf(messages: AgentMessage[]): ContextView {
		const view = viewOf(messages, this.anchor);
		if (view) return view;
		// A rewind reloads the window from the store: its latest compaction is another object now.
		const reloaded = anchorOf(messages, this.session.transcriptBase);
		const again = viewOf(messages, reloaded);
		if (again && reloaded !== undefined) {
			this.anchor = reloaded;
			return again;
		}
		this.options.logger.warn(
			{ sessionId: this.session.id },
			"the latest compaction is not in the context; sending it whole",
		);
		return { messages, trustFrom: 0, context: messages };
	}

	// --- compacting -----------------------------------------------------------------------------

	/**
	 * Compacts `view`: summarises what comes before the kept part (the previous summary folded in),
	 * appends the compaction message, moves the anchor. Never throws.
	 *
	 * 1. Cut: keep about `keepTokens` of recent messages; nothing older → `nothing`.
	 * 2. `compaction_start`, then the summary call on the session's model (its usage counts).
	 * 3. Failed or aborted → `compaction_end` with why; nothing else changes.
	 * 4. The compaction message goes to the end of the transcript, in one write; the anchor moves to
	 *    its first kept message; `compaction_end` with it.
	 * 5. What comes before the kept part leaves memory (the Agent's transcript and the run's context):
	 *    no model call reads it again, and the store has it for every other reader.
	 */
	private async compact(request: CompactionRequest): Promise<CompactionResult> {
		const { view, reason, tokensBefore } = request;
		// 1.
		const previous = this.anchor && view.messages[0] === this.anchor.compaction ? this.anchor.compaction : undefined;
		const from = previous ? 1 : 0;
		const cut = chooseCut(view.messages, from, request.keepTokens);
		if (cut === undefined) return { kind: "nothing" };
		const summarized = view.messages.slice(from, cut);
		const kept = view.messages.slice(cut);

		// 2.
		this.compacting = reason;
		const start: Omit<CompactionStartEvent, "type"> = {
			reason,
			tokensBefore,
			messagesToSummarize: summarized.length + (previous ? 1 : 0),
			messagesKept: kept.length,
			...(request.instructions ? { instructions: request.instructions } : {}),
		};
		this.session.publish("compaction_start", start);
		const model = this.session.model;
		const summaryTokens = Math.max(256, Math.floor(0.8 * this.settings().reserveTokens));
		const maxTokens = model.maxTokens > 0 ? Math.min(summaryTokens, model.maxTokens) : summaryTokens;
		const outcome = await requestSummary(
			summaryPrompt(summarized, previous, request.instructions, promptBudgetChars(model, maxTokens, previous)),
			{
				model,
				apiKey: this.session.apiKeyFor(model.provider),
				maxTokens,
				timeoutMs: model.idleTimeoutMs ?? this.options.providerIdleTimeoutMs,
				signal: request.signal,
				watch: this.options.watchModelCall?.(),
			},
		);
		this.session.addRunUsage(outcome.usage);
		this.options.keyBudgets?.add(this.session.ownerId, outcome.usage);
		this.options.tenantBudgets?.add(this.session.sharing.tenant, outcome.usage);

		// 3.
		if (outcome.kind === "failed") return this.failed(reason, tokensBefore, outcome.errorMessage, outcome.aborted);

		// 4.
		const transcript = this.session.messages;
		const base = this.session.transcriptBase;
		const messageIndex = base + transcript.length;
		const firstKept = kept[0];
		const message: CompactionMessage = {
			role: "compaction",
			summary: outcome.summary,
			firstKeptIndex: firstKept === undefined ? messageIndex : base + lastIndexOf(transcript, firstKept),
			reason,
			tokensBefore,
			tokensAfter: 0,
			...(request.instructions ? { instructions: request.instructions } : {}),
			model: `${model.provider}/${model.id}`,
			usage: outcome.usage,
			timestamp: Date.now(),
		};
		const compactedView: AgentMessage[] = [message, ...kept];
		message.tokensAfter = this.meter.measure(compactedView, compactedView.length);
		if (!this.session.appendMessage(message)) {
			return this.failed(reason, tokensBefore, "the session no longer exists", false);
		}
		const boundary = view.context[view.context.length - 1] as AgentMessage;
		this.anchor = { compaction: message, firstKept, boundary };
		this.compacting = undefined;
		this.lastError = undefined;
		const end: Omit<CompactionEndEvent, "type"> = {
			reason,
			outcome: "compacted",
			tokensBefore,
			tokensAfter: message.tokensAfter,
			message,
			messageIndex,
		};
		this.session.publish("compaction_end", end);

		// 5.
		this.release(firstKept ?? boundary, view.context);
		return {
			kind: "compacted",
			message,
			messageIndex,
			view: { messages: compactedView, trustFrom: compactedView.length, context: view.context },
		};
	}

	/**
	 * Drops the messages before `first` from the session's transcript and from `context` (the run's
	 * own copy, which the loop only appends to and replaces its last message of, so its front may go).
	 * `first` itself stays: the view finds the anchor's messages by object.
	 */
	private release(first: AgentMessage, context: AgentMessage[]): void {
		this.session.releaseBefore(first);
		const at = lastIndexOf(context, first);
		if (at > 0) context.splice(0, at);
	}

	private failed(
		reason: CompactionReason,
		tokensBefore: number,
		errorMessage: string,
		aborted: boolean,
	): CompactionResult {
		this.compacting = undefined;
		this.lastError = { at: Date.now(), reason, message: errorMessage };
		const end: Omit<CompactionEndEvent, "type"> = {
			reason,
			outcome: aborted ? "aborted" : "failed",
			tokensBefore,
			errorMessage,
		};
		this.session.publish("compaction_end", end);
		// An abort is the client's (or the run's) doing, not a failure to look into.
		if (aborted) this.options.logger.info({ sessionId: this.session.id, reason }, "compaction aborted");
		else this.options.logger.warn({ sessionId: this.session.id, reason, errorMessage }, "compaction failed");
		return { kind: "failed", errorMessage, aborted };
	}

	/** Whether a manual compaction would find anything to summarise now. */
	canCompact(keepRecentTokens?: number): boolean {
		const view = this.viewOf(this.session.messages);
		const from = this.anchor && view.messages[0] === this.anchor.compaction ? 1 : 0;
		return chooseCut(view.messages, from, keepRecentTokens ?? this.settings().keepTokens) !== undefined;
	}

	/**
	 * A manual compaction (`POST /v1/sessions/:id/compact`), as a run of its own outside the loop:
	 * refused while a run is active (`AGENT_BUSY`) or the budget is spent; its usage counts.
	 */
	async compactNow(instructions: string | undefined, keepRecentTokens: number | undefined): Promise<CompactionResult> {
		let result: CompactionResult = { kind: "nothing" };
		await this.session.runOutsideLoop(async (signal) => {
			const view = this.viewOf(this.session.messages);
			result = await this.compact({
				reason: "manual",
				view,
				tokensBefore: this.meter.measure(view.messages, view.trustFrom),
				keepTokens: keepRecentTokens ?? this.settings().keepTokens,
				signal,
				instructions,
			});
			// An aborted one ends as an aborted run (the abort was asked for), a failed one as an error.
			return result.kind === "failed" && !result.aborted
				? { failure: `compaction failed: ${result.errorMessage}` }
				: {};
		});
		return result;
	}

	// --- state ----------------------------------------------------------------------------------

	/**
	 * A `continue` after a compaction that ended the transcript behind an assistant message would
	 * make the model continue its own answer: like the reference's rule for a transcript that ends
	 * with the assistant, only queued steering makes it valid.
	 */
	continueProblem(): string | undefined {
		const messages = this.session.messages;
		let i = messages.length - 1;
		if (i < 0 || !isCompaction(messages[i])) return undefined;
		while (i >= 0 && isCompaction(messages[i])) i--;
		const last = messages[i] as { role?: string } | undefined;
		if (last?.role !== "assistant" || this.session.queueCounts().steeringCount > 0) return undefined;
		return `The transcript of session ${this.session.id} ends with the assistant's answer and a compaction; send a prompt (queued follow-ups are delivered after it) or queue a steering message.`;
	}

	/** The `compaction` and `budget` fields of the session state. */
	state(): Record<string, unknown> {
		const settings = this.settings();
		const view = this.viewOf(this.session.messages);
		const last = this.anchor?.compaction;
		const usage = this.session.usage;
		return {
			compaction: {
				enabled: settings.enabled,
				reserveTokens: settings.reserveTokens,
				keepRecentTokens: settings.keepRecentTokens,
				contextWindow: settings.contextWindow,
				thresholdTokens: settings.thresholdTokens,
				contextTokens: this.meter.measure(view.messages, view.trustFrom),
				status: this.compacting ? "compacting" : "idle",
				last: last
					? {
							at: last.timestamp,
							reason: last.reason,
							tokensBefore: last.tokensBefore,
							tokensAfter: last.tokensAfter,
							firstKeptIndex: last.firstKeptIndex,
						}
					: null,
				lastError: this.lastError ?? null,
			},
			budget: budgetState(this.session.config.budget, usage, this.turns),
		};
	}
}
