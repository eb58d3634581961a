/**
 * Registers the built-in wire APIs with the provider registry, on import and on request.
 */
import { registerApiProvider } from "../registry.js";
import { streamSimpleAnthropicMessages } from "./anthropic-messages.js";
import { streamSimpleGoogleGemini } from "./google-gemini.js";
import { streamSimpleOpenAICompletions } from "./openai-completions.js";
import { streamSimpleOpenAIResponses } from "./openai-responses.js";

/**
 * Registers the built-in wire APIs with the provider registry, so `streamSimple` works for every
 * built-in `model.api` without the caller registering anything. `stream.ts` imports this module for
 * its side effect; `registerBuiltInApiProviders()` can be called again to restore the built-ins
 * after an application replaced one.
 *
 * Providers must not import `stream.ts` (it imports this module): use `streamProvider` and
 * `OutputBuilder` from `./provider-stream.js` / `./output-builder.js`.
 */
export function registerBuiltInApiProviders(): void {
	// One line per provider file:
	registerApiProvider("anthropic-messages", streamSimpleAnthropicMessages);
	registerApiProvider("google-generative-ai", streamSimpleGoogleGemini);
	registerApiProvider("openai-completions", streamSimpleOpenAICompletions);
	registerApiProvider("openai-responses", streamSimpleOpenAIResponses);
}

registerBuiltInApiProviders();
