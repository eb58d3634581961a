import { afterEach, describe, expect, it } from "vitest";
import { getEnvApiKey, resolveApiKey } from "../../src/ai/env-keys.js";
import {
	getModel,
	getModels,
	getProviders,
	registerCustomModel,
	registerModel,
	unregisterModel,
} from "../../src/ai/models.js";
import { getApiProvider } from "../../src/ai/registry.js";
import { calculateCost } from "../../src/ai/usage.js";
import "../../src/ai/stream.js";

describe("model registry", () => {
	afterEach(() => {
		unregisterModel("ollama", "qwen3:8b");
		unregisterModel("my-gateway", "m");
		delete process.env.MY_GATEWAY_KEY;
	});

	it("has built-in models for openai, anthropic and google, each with a registered wire API", () => {
		expect(getProviders()).toEqual(expect.arrayContaining(["openai", "anthropic", "google"]));
		for (const provider of ["openai", "anthropic", "google"]) {
			const models = getModels(provider);
			expect(models.length).toBeGreaterThan(3);
			for (const model of models) {
				expect(model.provider).toBe(provider);
				expect(model.baseUrl).toMatch(/^https:\/\//);
				expect(model.contextWindow).toBeGreaterThan(model.maxTokens);
				expect(model.cost.input).toBeGreaterThan(0);
				expect(model.cost.output).toBeGreaterThan(model.cost.input);
				expect(model.input).toContain("text");
			}
		}
		expect(getModel("openai", "gpt-5")).toMatchObject({
			api: "openai-responses",
			reasoning: true,
			contextWindow: 400_000,
		});
		expect(getModel("anthropic", "claude-haiku-4-5")).toMatchObject({
			api: "anthropic-messages",
			cost: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
		});
		expect(getModel("google", "gemini-2.5-pro")?.api).toBe("google-generative-ai");
		expect(getModel("openai", "no-such-model")).toBeUndefined();
		expect(getApiProvider("openai-responses")).toBeTypeOf("function");
		expect(getApiProvider("openai-completions")).toBeTypeOf("function");
	});

	it("registers custom OpenAI-compatible models from configuration, with their key variable", () => {
		const model = registerCustomModel({
			provider: "my-gateway",
			id: "m",
			baseUrl: "http://127.0.0.1:9999/v1/",
			apiKeyEnv: "MY_GATEWAY_KEY",
			compat: { maxTokensField: "max_tokens", supportsDeveloperRole: false },
			cost: { input: 1, output: 2 },
		});
		expect(model).toMatchObject({
			api: "openai-completions",
			baseUrl: "http://127.0.0.1:9999/v1",
			compat: { maxTokensField: "max_tokens" },
			cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
		});
		expect(getModel("my-gateway", "m")).toBe(model);
		expect(getEnvApiKey("my-gateway")).toBeUndefined();
		process.env.MY_GATEWAY_KEY = "secret";
		expect(getEnvApiKey("my-gateway")).toBe("secret");
		expect(resolveApiKey("my-gateway", "explicit")).toBe("explicit");
		expect(getModels("my-gateway")).toHaveLength(1);
	});

	it("rejects incomplete models with the field to fix", () => {
		expect(() => registerModel({ id: "", api: "x", provider: "p", baseUrl: "http://x" } as any)).toThrow(/model\.id/);
		expect(() => registerCustomModel({ provider: "ollama", id: "qwen3:8b", baseUrl: "localhost:11434" })).toThrow(
			/absolute URL/,
		);
	});

	it("computes cost per million tokens", () => {
		const model = getModel("openai", "gpt-5")!;
		const usage = calculateCost(model, {
			input: 1_000_000,
			output: 100_000,
			cacheRead: 2_000_000,
			cacheWrite: 0,
			totalTokens: 3_100_000,
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
		});
		expect(usage.cost.input).toBeCloseTo(1.25, 10);
		expect(usage.cost.output).toBeCloseTo(1, 10);
		expect(usage.cost.cacheRead).toBeCloseTo(0.25, 10);
		expect(usage.cost.total).toBeCloseTo(2.5, 10);
	});
});
