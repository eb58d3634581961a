/**
 * Which models need an API key (`requiresApiKey`): every built-in wire API has an explicit rule,
 * the Gemini API needs a key like Anthropic's, and a wire API this module does not know needs a
 * key whenever its provider has a key variable (it fails closed instead of being keyless by default).
 */
import { describe, expect, it } from "vitest";
import { findEnvKeys, hasKeyRule, registerProviderEnvKey, requiresApiKey } from "../../src/ai/env-keys.js";
import { getModels, getProviders } from "../../src/ai/models.js";
import { registerFauxProvider } from "../../src/ai/providers/faux.js";
import { getRegisteredApis } from "../../src/ai/registry.js";
import "../../src/ai/stream.js";

const PROVIDER = "env-keys-test-provider";

describe("requiresApiKey", () => {
	it("has a rule for every built-in wire API, the ones registered for streamSimple included", () => {
		const faux = registerFauxProvider();
		try {
			const apis = getRegisteredApis();
			expect(apis).toEqual(
				expect.arrayContaining([
					"anthropic-messages",
					"google-generative-ai",
					"openai-completions",
					"openai-responses",
					"faux",
				]),
			);
			for (const api of apis) expect(hasKeyRule(api), api).toBe(true);
			for (const provider of getProviders()) {
				for (const model of getModels(provider)) expect(hasKeyRule(model.api), `${provider}/${model.id}`).toBe(true);
			}
		} finally {
			faux.unregister();
		}
	});

	it("says every built-in model of openai, anthropic and google needs its provider's key", () => {
		for (const provider of ["openai", "anthropic", "google"]) {
			const models = getModels(provider);
			expect(models.length).toBeGreaterThan(0);
			expect(findEnvKeys(provider)?.length).toBeGreaterThan(0);
			for (const model of models) expect(requiresApiKey(model), `${provider}/${model.id}`).toBe(true);
		}
		const gemini = { api: "google-generative-ai", provider: "google", baseUrl: "http://127.0.0.1:9/v1beta" };
		expect(requiresApiKey(gemini), "Gemini needs a key on any host").toBe(true);
	});

	it("needs no key for the scripted model, nor for an OpenAI-compatible server that is not a known keyed host", () => {
		expect(requiresApiKey({ api: "faux", provider: "faux", baseUrl: "http://localhost:0" })).toBe(false);
		const local = { provider: "ollama", baseUrl: "http://localhost:11434/v1" };
		expect(requiresApiKey({ ...local, api: "openai-completions" })).toBe(false);
		expect(requiresApiKey({ ...local, api: "openai-responses" })).toBe(false);
		expect(
			requiresApiKey({ api: "openai-completions", provider: "groq", baseUrl: "https://api.groq.com/openai/v1" }),
		).toBe(true);
	});

	it("fails closed for a wire API it does not know: a key is needed when the provider has a key variable", () => {
		const own = { api: "my-own-wire-api", baseUrl: "http://127.0.0.1:9" };
		expect(requiresApiKey({ ...own, provider: "openai" })).toBe(true);
		expect(requiresApiKey({ ...own, provider: "google" })).toBe(true);
		expect(requiresApiKey({ ...own, provider: PROVIDER })).toBe(false);
		registerProviderEnvKey(PROVIDER, "ENV_KEYS_TEST_KEY");
		expect(requiresApiKey({ ...own, provider: PROVIDER })).toBe(true);
		expect(hasKeyRule("my-own-wire-api")).toBe(false);
	});
});
