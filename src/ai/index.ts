/**
 * Public API of the provider layer: model registry, API keys, the shared provider driver
 * and the OpenAI, Anthropic and Gemini wire APIs. Re-exported from the package root (`src/index.ts`). Importing it
 * registers the built-in wire APIs (through stream.ts), so `streamSimple` works at once.
 */
export { findEnvKeys, getEnvApiKey, registerProviderEnvKey, resolveApiKey } from "./env-keys.js";
export {
	closeHttpPools,
	getHttpDispatcher,
	type HttpProxyConfig,
	HttpProxyConfigError,
	readHttpProxyEnv,
} from "./http.js";
export {
	type CustomModelConfig,
	getModel,
	getModels,
	getProviders,
	registerCustomModel,
	registerCustomModels,
	registerModel,
	unregisterModel,
} from "./models.js";
export { parseStreamingJson, parseToolArguments } from "./partial-json.js";
export {
	type AnthropicMessagesOptions,
	streamAnthropicMessages,
	streamSimpleAnthropicMessages,
} from "./providers/anthropic-messages.js";
export {
	type GoogleGeminiOptions,
	streamGoogleGemini,
	streamSimpleGoogleGemini,
} from "./providers/google-gemini.js";
export {
	type OpenAICompletionsOptions,
	resolveCompat as resolveOpenAICompletionsCompat,
	streamOpenAICompletions,
	streamSimpleOpenAICompletions,
} from "./providers/openai-completions.js";
export {
	type OpenAIResponsesOptions,
	streamOpenAIResponses,
	streamSimpleOpenAIResponses,
} from "./providers/openai-responses.js";
export { OutputBuilder, type TokenCounts } from "./providers/output-builder.js";
export {
	isRetryableErrorType,
	isRetryableStatus,
	type ParsedProviderError,
	ProviderError,
	parseErrorBody,
	parseRetryAfter,
} from "./providers/provider-errors.js";
export {
	DEFAULT_IDLE_TIMEOUT_MS,
	DEFAULT_MAX_RETRIES,
	DEFAULT_MAX_RETRY_DELAY_MS,
	DEFAULT_RETRY_BASE_DELAY_MS,
	type DriverOptions,
	type ProviderCall,
	type ProviderRequest,
	streamProvider,
	type WireHandler,
} from "./providers/provider-stream.js";
export { registerBuiltInApiProviders } from "./providers/register-builtins.js";
export {
	adjustMaxTokensForThinking,
	buildBaseOptions,
	clampReasoning,
	DEFAULT_THINKING_BUDGETS,
	reasoningEffortFor,
	thinkingBudgetFor,
} from "./providers/simple-options.js";
export { streamSimple } from "./stream.js";
export { addUsage, calculateCost, zeroUsage } from "./usage.js";
