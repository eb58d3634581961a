/**
 * API keys from the environment, per provider.
 *
 * Order (see {@link resolveApiKey}): `options.apiKey`, else the provider's environment variables in
 * the order listed here. Custom providers register their variable with {@link registerProviderEnvKey}
 * (`registerCustomModel` does it from `apiKeyEnv`). Keys are returned, never logged or put into error
 * messages: errors name the variable, not its value.
 */
import type { KnownApi, Model } from "./types.js";

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

/** Whether a call to `baseUrl` (lower-cased) over one wire API fails without a key. */
type KeyRule = (baseUrl: string) => boolean;

const always: KeyRule = () => true;
const never: KeyRule = () => false;

/**
 * The key rule of every built-in wire API. Typed over `KnownApi`, so a wire API added there
 * without a rule (or a rule under a misspelt name) does not compile: no built-in API can be keyless
 * by omission.
 */
const KEY_RULES: { readonly [api in KnownApi]: KeyRule } = {
	"anthropic-messages": always,
	"google-generative-ai": always,
	"openai-completions": (url) => KEYED_COMPLETIONS_HOSTS.some((host) => url.includes(host)),
	"openai-responses": (url) => url.includes("api.openai.com"),
	// The scripted model talks to no server.
	faux: never,
};

/** True for the wire APIs this module has a rule for (the built-in ones). */
export function hasKeyRule(api: string): api is KnownApi {
	return Object.hasOwn(KEY_RULES, api);
}

/**
 * Whether a call of `model` fails without an API key: the OpenAI wire APIs check this before
 * their request (the Anthropic and Gemini providers refuse any call without a key), and the server
 * before it accepts the model for a session (a model it cannot call is refused then, not at its
 * first call inside a stream).
 *
 * A built-in wire API answers by its rule: Anthropic and Gemini always need a key; the OpenAI wire
 * APIs only on the hosts known to require one; the scripted model never. An application's own wire
 * API (registered with `registerApiProvider`) is not known here, so it fails closed as far as can be
 * told: it needs a key when its provider has a key variable (a built-in provider's, or one given
 * with `registerProviderEnvKey` / `apiKeyEnv`), and none when there is no variable it could use.
 */
export function requiresApiKey(model: Pick<Model<any>, "api" | "baseUrl" | "provider">): boolean {
	if (hasKeyRule(model.api)) return KEY_RULES[model.api]((model.baseUrl ?? "").toLowerCase());
	return envKeys.has(model.provider);
}
