/**
 * The chain around a session's model calls, built in one place in one stated order. Extensions
 * (the lease guard, budgets and compaction, tracing) each give the hooks of their layer; the
 * session composes them by {@link MODEL_CALL_LAYERS}, whatever order the extensions were added
 * in, around the innermost call that reads the session's current config.
 */
import type { AgentLoopConfig, BeforeToolCallContext, BeforeToolCallResult, StreamFn } from "../../../agent/types.js";

/**
 * The layers, outermost first:
 *
 * 1. `lease` (cluster mode): no model or tool call starts while this replica may have lost the
 *    session's lease.
 * 2. `budget`: budgets refuse the call, then compaction shrinks the context (or retries after an
 *    overflow) — one layer, since a retry after an overflow is a second call of the inner layers.
 * 3. `tracing`: one span per call that reaches a provider (a retry too).
 *
 * Innermost: the session's current config (model, system prompt, reasoning level of now).
 */
export const MODEL_CALL_LAYERS = ["lease", "budget", "tracing"] as const;

export type ModelCallLayer = (typeof MODEL_CALL_LAYERS)[number];

export type TransformContext = NonNullable<AgentLoopConfig["transformContext"]>;
export type ConvertToLlm = AgentLoopConfig["convertToLlm"];
export type BeforeToolCall = (
	context: BeforeToolCallContext,
	signal?: AbortSignal,
) => Promise<BeforeToolCallResult | undefined>;

/**
 * What one layer adds. Each wrapper gets the chain inside it and returns the chain with this
 * layer around it. All optional. Contract: wrappers are pure (called again whenever the chain is
 * rebuilt) and what they return must not throw synchronously.
 */
export interface ModelCallHooks {
	stream?(inner: StreamFn): StreamFn;
	/** The context transform before each model call; `inner` is the inner layers' (or none). */
	transformContext?(inner: TransformContext | undefined): TransformContext | undefined;
	/** How messages become the provider's (set by one layer at most; the innermost set wins). */
	convertToLlm?: ConvertToLlm;
	/** Around the session's own `beforeToolCall` (its extensions' hooks). */
	beforeToolCall?(inner: BeforeToolCall): BeforeToolCall;
}

/** The composed chain. */
export interface ModelCallChain {
	stream: StreamFn;
	transformContext: TransformContext | undefined;
	convertToLlm: ConvertToLlm | undefined;
	beforeToolCall: BeforeToolCall;
}

/** Composes `layers` around the innermost calls, by {@link MODEL_CALL_LAYERS} (outermost first). */
export function buildModelCallChain(
	layers: ReadonlyMap<ModelCallLayer, ModelCallHooks>,
	innermost: { stream: StreamFn; beforeToolCall: BeforeToolCall },
): ModelCallChain {
	// Every field written here, not spread from `innermost`: V8 takes a slow path for an object
	// literal that spreads one object and then adds fields it did not have.
	const chain: ModelCallChain = {
		stream: innermost.stream,
		transformContext: undefined,
		convertToLlm: undefined,
		beforeToolCall: innermost.beforeToolCall,
	};
	for (let i = MODEL_CALL_LAYERS.length - 1; i >= 0; i--) {
		const hooks = layers.get(MODEL_CALL_LAYERS[i] as ModelCallLayer);
		if (!hooks) continue;
		if (hooks.stream) chain.stream = hooks.stream(chain.stream);
		if (hooks.transformContext) chain.transformContext = hooks.transformContext(chain.transformContext);
		if (hooks.convertToLlm && !chain.convertToLlm) chain.convertToLlm = hooks.convertToLlm;
		if (hooks.beforeToolCall) chain.beforeToolCall = hooks.beforeToolCall(chain.beforeToolCall);
	}
	return chain;
}
