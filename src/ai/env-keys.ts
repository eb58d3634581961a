/**
 * API keys from the environment, per provider.
 *
 * Order (see {@link resolveApiKey}): `options.apiKey`, else the provider's environment variables in
 * the order listed here. Custom providers register their variable with {@link registerProviderEnvKey}
 * (`registerCustomModel` does it from `apiKeyEnv`). Keys are returned, never logged or put into error
 * messages: errors name the variable, not its value.
 */
import type { Model } from "./types.js";

const envKeys = new Map<string, string[]>([
	["openai", ["OPENAI_API_KEY"]],
	["anthropic", ["ANTHROPIC_API_KEY"]],
	["google", ["GEMINI_API_KEY", "GOOGLE_API_KEY"]],
	// Common OpenAI-compatible hosts, so a custom model for them needs no apiKeyEnv.
	["openrouter", ["OPENROUTER_API_KEY"]],
	["groq", ["GROQ_API_KEY"]],
	["deepseek", ["DEEPSEEK_API_KEY"]],
	["together", ["TOGETHER_API_KEY"]],
	["xai", ["XAI_API_KEY"]],
	["mistral", ["MISTRAL_API_KEY"]],
	["cerebras", ["CEREBRAS_API_KEY"]],
]);

/** Sets the environment variable(s) holding the API key of `provider` (replacing earlier ones). */
export function registerProviderEnvKey(provider: string, envVar: string | string[]): void {
	const names = (Array.isArray(envVar) ? envVar : [envVar]).filter((name) => typeof name === "string" && name !== "");
	if (names.length === 0) {
		throw new TypeError(
			`registerProviderEnvKey("${provider}", ...): give an environment variable name such as "MY_API_KEY"`,
		);
	}
	envKeys.set(provider, names);
}

/** The environment variable names consulted for `provider`, or undefined when none are known. */
export function findEnvKeys(provider: string): string[] | undefined {
	const names = envKeys.get(provider);
	return names ? [...names] : undefined;
}

/** The first non-empty key among `provider`'s environment variables. */
export function getEnvApiKey(provider: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
	for (const name of envKeys.get(provider) ?? []) {
		const value = env[name];
		if (value && value.trim() !== "") return value.trim();
	}
	return undefined;
}

/** `apiKey` when given, else the provider's environment key. */
export function resolveApiKey(provider: string, apiKey?: string): string | undefined {
	return apiKey && apiKey !== "" ? apiKey : getEnvApiKey(provider);
}

/** A message for a missing key that names where to put it (never a value). */
export function missingApiKeyMessage(provider: string): string {
	const names = envKeys.get(provider);
	return names
		? `No API key for provider "${provider}": set ${names.join(" or ")} or pass options.apiKey`
		: `No API key for provider "${provider}": pass options.apiKey, or give the model's configuration an apiKeyEnv`;
}

/** Chat Completions hosts that refuse a request without a key (a local or self-hosted server may need none). */
const KEYED_COMPLETIONS_HOSTS = ["api.openai.com", "openrouter.ai", "groq.com", "deepseek.com"];

/**
 * Whether a call of `model` fails without an API key: every provider checks this before its
 * request, and the server before it accepts the model for a session. Anthropic and Gemini always
 * need one; the OpenAI wire APIs only on the hosts known to require one; other wire APIs (the
 * scripted models, an application's own) are not known to.
 */
export function requiresApiKey(model: Pick<Model<any>, "api" | "baseUrl">): boolean {
	const url = (model.baseUrl ?? "").toLowerCase();
	switch (model.api) {
		case "anthropic-messages":
		case "google-gemini":
			return true;
		case "openai-completions":
			return KEYED_COMPLETIONS_HOSTS.some((host) => url.includes(host));
		case "openai-responses":
			return url.includes("api.openai.com");
		default:
			return false;
	}
}
