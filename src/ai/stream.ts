/**
 * `streamSimple`, the default stream function: one model call dispatched to the wire API registered
 * for `model.api` (the built-in ones are registered on import), and `errorStream` for failures
 * found before any request.
 */
import { createAssistantMessage } from "./assistant-message.js";
import { AssistantMessageEventStream } from "./event-stream.js";
// Side effect: registers the built-in wire APIs, so streamSimple works without setup.
import "./providers/register-builtins.js";
import { getApiProvider } from "./registry.js";
import type { AssistantMessage, Context, Model, SimpleStreamOptions } from "./types.js";

/**
 * The default `StreamFn`: dispatches on `model.api` to the registered wire API.
 *
 * Never throws: an unknown api, or a provider that throws despite its contract, yields a stream
 * whose only event is `error` with a message naming the problem.
 */
export function streamSimple(
	model: Model<any>,
	context: Context,
	options?: SimpleStreamOptions,
): AssistantMessageEventStream {
	const provider = getApiProvider(model.api);
	if (!provider) {
		return errorStream(
			model,
			`No provider registered for api "${model.api}" (model ${model.provider}/${model.id}). Register one with registerApiProvider().`,
		);
	}
	try {
		return provider(model, context, options);
	} catch (err) {
		return errorStream(
			model,
			`Provider for api "${model.api}" threw: ${err instanceof Error ? err.message : String(err)}`,
		);
	}
}

/** A stream that ends at once with `stopReason: "error"` and `errorMessage`. */
export function errorStream(model: Model<any>, errorMessage: string): AssistantMessageEventStream {
	const stream = new AssistantMessageEventStream();
	const message: AssistantMessage = { ...createAssistantMessage(model), stopReason: "error", errorMessage };
	stream.push({ type: "error", reason: "error", error: message });
	return stream;
}
