/**
 * Model registry: the built-in models of openai, anthropic and google, plus whatever the
 * application registers (`registerModel`, or `registerCustomModel` for an OpenAI-compatible server
 * from configuration).
 *
 * Built-in values (context window, max output tokens, USD prices per million tokens: input, output,
 * cache read, cache write) are the providers' published figures as of late 2026 (platform.claude.com
 * model pages, developers.openai.com model pages, ai.google.dev pricing). Prices change: an
 * application can re-register a model with its own figures; a later registration of the same
 * provider/id replaces the earlier one.
 */
import { registerProviderEnvKey } from "./env-keys.js";
import type { Api, Model, OpenAICompletionsCompat, OpenAIResponsesCompat, ThinkingLevelMap } from "./types.js";

const OPENAI = "https://api.openai.com/v1";
const ANTHROPIC = "https://api.anthropic.com";
const GOOGLE = "https://generativelanguage.googleapis.com/v1beta";

type Spec = [
	id: string,
	name: string,
	reasoning: boolean,
	price: [input: number, output: number, cacheRead: number, cacheWrite: number],
	contextWindow: number,
	maxTokens: number,
	thinkingLevelMap?: ThinkingLevelMap,
	input?: ("text" | "image")[],
];

// GPT-5 family: reasoning cannot be switched off entirely; newer ones add `xhigh`.
const GPT5: ThinkingLevelMap = { off: null };
const GPT5X: ThinkingLevelMap = { off: null, xhigh: "xhigh" };

const openaiSpecs: Spec[] = [
	["gpt-5.5", "GPT-5.5", true, [5, 30, 0.5, 0], 1_050_000, 128_000, GPT5X],
	["gpt-5.5-pro", "GPT-5.5 Pro", true, [30, 180, 0, 0], 1_050_000, 128_000, GPT5X],
	["gpt-5.4", "GPT-5.4", true, [2.5, 15, 0.25, 0], 1_050_000, 128_000, GPT5X],
	["gpt-5.4-mini", "GPT-5.4 mini", true, [0.75, 4.5, 0.075, 0], 400_000, 128_000, GPT5X],
	["gpt-5.4-nano", "GPT-5.4 nano", true, [0.2, 1.25, 0.02, 0], 400_000, 128_000, GPT5X],
	["gpt-5.2", "GPT-5.2", true, [1.75, 14, 0.175, 0], 400_000, 128_000, GPT5X],
	["gpt-5.1", "GPT-5.1", true, [1.25, 10, 0.125, 0], 400_000, 128_000, GPT5],
	["gpt-5", "GPT-5", true, [1.25, 10, 0.125, 0], 400_000, 128_000, GPT5],
	["gpt-5-mini", "GPT-5 mini", true, [0.25, 2, 0.025, 0], 400_000, 128_000, GPT5],
	["gpt-5-nano", "GPT-5 nano", true, [0.05, 0.4, 0.005, 0], 400_000, 128_000, GPT5],
	["gpt-4.1", "GPT-4.1", false, [2, 8, 0.5, 0], 1_047_576, 32_768],
	["gpt-4.1-mini", "GPT-4.1 mini", false, [0.4, 1.6, 0.1, 0], 1_047_576, 32_768],
	["gpt-4.1-nano", "GPT-4.1 nano", false, [0.1, 0.4, 0.025, 0], 1_047_576, 32_768],
	["gpt-4o", "GPT-4o", false, [2.5, 10, 1.25, 0], 128_000, 16_384],
	["gpt-4o-mini", "GPT-4o mini", false, [0.15, 0.6, 0.075, 0], 128_000, 16_384],
	["o3", "o3", true, [2, 8, 0.5, 0], 200_000, 100_000],
	["o4-mini", "o4-mini", true, [1.1, 4.4, 0.275, 0], 200_000, 100_000],
];

// Only ids and prices with a source (the reference's @mariozechner/pi-ai 0.73.1 model list): the
// first entry is the default model for an ANTHROPIC_API_KEY, so a guessed id would fail every
// session. Newer models: add them with the `models` config (docs/configuration.md).
const anthropicSpecs: Spec[] = [
	["claude-opus-4-7", "Claude Opus 4.7", true, [5, 25, 0.5, 6.25], 1_000_000, 128_000, { xhigh: "xhigh" }],
	["claude-opus-4-6", "Claude Opus 4.6", true, [5, 25, 0.5, 6.25], 1_000_000, 128_000, { xhigh: "max" }],
	["claude-sonnet-4-6", "Claude Sonnet 4.6", true, [3, 15, 0.3, 3.75], 1_000_000, 64_000],
	["claude-opus-4-5", "Claude Opus 4.5", true, [5, 25, 0.5, 6.25], 200_000, 64_000],
	["claude-sonnet-4-5", "Claude Sonnet 4.5", true, [3, 15, 0.3, 3.75], 200_000, 64_000],
	["claude-haiku-4-5", "Claude Haiku 4.5", true, [1, 5, 0.1, 1.25], 200_000, 64_000],
	["claude-opus-4-1", "Claude Opus 4.1", true, [15, 75, 1.5, 18.75], 200_000, 32_000],
	["claude-sonnet-4-0", "Claude Sonnet 4", true, [3, 15, 0.3, 3.75], 200_000, 64_000],
];

// Gemini 3 Pro takes only LOW/HIGH thinking levels and cannot switch thinking off.
const GEMINI3_PRO: ThinkingLevelMap = { off: null, minimal: null, low: "LOW", medium: null, high: "HIGH" };

const googleSpecs: Spec[] = [
	["gemini-3.1-pro-preview", "Gemini 3.1 Pro (preview)", true, [2, 12, 0.2, 0], 1_048_576, 65_536, GEMINI3_PRO],
	["gemini-3-pro-preview", "Gemini 3 Pro (preview)", true, [2, 12, 0.2, 0], 1_048_576, 65_536, GEMINI3_PRO],
	["gemini-3-flash-preview", "Gemini 3 Flash (preview)", true, [0.5, 3, 0.05, 0], 1_048_576, 65_536, { off: null }],
	["gemini-2.5-pro", "Gemini 2.5 Pro", true, [1.25, 10, 0.125, 0], 1_048_576, 65_536],
	["gemini-2.5-flash", "Gemini 2.5 Flash", true, [0.3, 2.5, 0.03, 0], 1_048_576, 65_536],
	["gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite", true, [0.1, 0.4, 0.01, 0], 1_048_576, 65_536],
	["gemini-2.0-flash", "Gemini 2.0 Flash", false, [0.1, 0.4, 0.025, 0], 1_048_576, 8_192],
];

function build(provider: string, api: Api, baseUrl: string, spec: Spec): Model<Api> {
	const [
		id,
		name,
		reasoning,
		[input, output, cacheRead, cacheWrite],
		contextWindow,
		maxTokens,
		thinkingLevelMap,
		kinds,
	] = spec;
	const model: Model<Api> = {
		id,
		name,
		api,
		provider,
		baseUrl,
		reasoning,
		input: kinds ?? ["text", "image"],
		cost: { input, output, cacheRead, cacheWrite },
		contextWindow,
		maxTokens,
	};
	if (thinkingLevelMap) model.thinkingLevelMap = thinkingLevelMap;
	return model;
}

const registry = new Map<string, Map<string, Model<Api>>>();

function loadBuiltIns(): void {
	for (const spec of openaiSpecs) registerModel(build("openai", "openai-responses", OPENAI, spec));
	for (const spec of anthropicSpecs) registerModel(build("anthropic", "anthropic-messages", ANTHROPIC, spec));
	for (const spec of googleSpecs) registerModel(build("google", "google-generative-ai", GOOGLE, spec));
}

/** The model `provider/id`, or undefined when it is not registered. */
export function getModel(provider: string, id: string): Model<Api> | undefined {
	return registry.get(provider)?.get(id);
}

/** Every model of `provider` (empty when none). */
export function getModels(provider: string): Model<Api>[] {
	return [...(registry.get(provider)?.values() ?? [])];
}

/** Providers with at least one model. */
export function getProviders(): string[] {
	return [...registry.keys()].filter((provider) => (registry.get(provider)?.size ?? 0) > 0);
}

/**
 * Adds (or replaces) a model. Throws a `TypeError` naming the missing field when the model is
 * incomplete (caller misuse; a half-filled model would fail later, far from its cause).
 */
export function registerModel<TApi extends Api>(model: Model<TApi>): Model<TApi> {
	for (const field of ["id", "api", "provider", "baseUrl"] as const) {
		if (typeof model?.[field] !== "string" || model[field] === "") {
			throw new TypeError(
				`registerModel: model.${field} must be a non-empty string (got ${JSON.stringify(model?.[field])})`,
			);
		}
	}
	let models = registry.get(model.provider);
	if (!models) {
		models = new Map();
		registry.set(model.provider, models);
	}
	models.set(model.id, model as Model<Api>);
	return model;
}

/** Removes a model; true when it was registered. */
export function unregisterModel(provider: string, id: string): boolean {
	return registry.get(provider)?.delete(id) ?? false;
}

/**
 * A custom model from configuration, typically an OpenAI-compatible server (Ollama, vLLM,
 * llama.cpp, LM Studio, OpenRouter, Groq, DeepSeek, Together, a gateway).
 */
export interface CustomModelConfig {
	/** Provider name the model is registered under (and whose key it uses), e.g. "ollama", "openrouter". */
	provider: string;
	/** Model id sent to the server, e.g. "qwen3:8b". */
	id: string;
	/** Base URL including the version path, e.g. "http://localhost:11434/v1". */
	baseUrl: string;
	/** Default `openai-completions`. */
	api?: Api;
	name?: string;
	/** Environment variable holding the API key (e.g. "OPENROUTER_API_KEY"); none = no key needed or a known provider's. */
	apiKeyEnv?: string;
	/** Known differences of this server (Chat Completions: `maxTokensField`, `supportsDeveloperRole`, ...). */
	compat?: OpenAICompletionsCompat | OpenAIResponsesCompat;
	reasoning?: boolean;
	thinkingLevelMap?: ThinkingLevelMap;
	/** Default ["text"]. */
	input?: ("text" | "image")[];
	/** Default 128000. */
	contextWindow?: number;
	/** Default 16384. */
	maxTokens?: number;
	/** USD per million tokens; default all 0 (local models). */
	cost?: Partial<Model<Api>["cost"]>;
	headers?: Record<string, string>;
	/** Idle timeout in ms for calls to this model (see `Model.idleTimeoutMs`); 0 = none; default: the server's. */
	idleTimeoutMs?: number;
}

/**
 * Registers a model from a configuration record and returns it. `apiKeyEnv` becomes the
 * provider's key variable. Throws a `TypeError` for a record without provider, id or a valid
 * absolute `baseUrl`, or with an `idleTimeoutMs` that is not a non-negative integer.
 */
export function registerCustomModel(config: CustomModelConfig): Model<Api> {
	for (const field of ["provider", "id", "baseUrl"] as const) {
		if (typeof config?.[field] !== "string" || config[field] === "") {
			throw new TypeError(`registerCustomModel: config.${field} must be a non-empty string`);
		}
	}
	let protocol = "";
	try {
		protocol = new URL(config.baseUrl).protocol;
	} catch {
		// reported below
	}
	if (protocol !== "http:" && protocol !== "https:") {
		throw new TypeError(
			`registerCustomModel: config.baseUrl must be an absolute URL such as "http://localhost:11434/v1" (got "${config.baseUrl}")`,
		);
	}
	const idle = config.idleTimeoutMs;
	if (idle !== undefined && !(Number.isSafeInteger(idle) && idle >= 0)) {
		throw new TypeError(
			`registerCustomModel: config.idleTimeoutMs must be a non-negative integer of milliseconds (got ${JSON.stringify(idle)})`,
		);
	}
	if (config.apiKeyEnv) registerProviderEnvKey(config.provider, config.apiKeyEnv);
	const model: Model<Api> = {
		id: config.id,
		name: config.name ?? config.id,
		api: config.api ?? "openai-completions",
		provider: config.provider,
		baseUrl: config.baseUrl.replace(/\/+$/, ""),
		reasoning: config.reasoning ?? false,
		input: config.input ?? ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, ...config.cost },
		contextWindow: config.contextWindow ?? 128_000,
		maxTokens: config.maxTokens ?? 16_384,
	};
	if (config.thinkingLevelMap) model.thinkingLevelMap = config.thinkingLevelMap;
	if (config.compat) (model as Model<any>).compat = config.compat;
	if (config.headers) model.headers = config.headers;
	if (idle !== undefined) model.idleTimeoutMs = idle;
	return registerModel(model);
}

/** Registers several custom models (e.g. the `models` list of a config file). */
export function registerCustomModels(configs: CustomModelConfig[]): Model<Api>[] {
	return configs.map(registerCustomModel);
}

loadBuiltIns();
