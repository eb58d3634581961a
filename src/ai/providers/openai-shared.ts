/**
 * What the two OpenAI wire APIs (Chat Completions and Responses) share: the bearer-key request,
 * the `streamSimple` options mapping, image data URLs and the token counts of their usage objects.
 * Beside the two providers rather than inside one, so that neither provider imports the other.
 */
import { missingApiKeyMessage, requiresApiKey, resolveApiKey } from "../env-keys.js";
import type { ImageContent, Model, SimpleStreamOptions, StreamOptions, ThinkingLevel } from "../types.js";
import type { TokenCounts } from "./output-builder.js";
import { ProviderError } from "./provider-errors.js";
import { buildBaseOptions, reasoningEffortFor } from "./simple-options.js";

/**
 * `{url, headers}` of a call to `{baseUrl}/{path}` with the API key as a bearer token. Throws a
 * {@link ProviderError} (the driver ends the call in `error`) when the key is missing and the
 * server needs one; a local server that needs none gets no `authorization` header.
 */
export function openAIRequestTarget(
	model: Model<any>,
	path: string,
	apiKeyOption: string | undefined,
): { url: string; headers: Record<string, string> } {
	const provider = String(model.provider);
	const apiKey = resolveApiKey(provider, apiKeyOption);
	if (!apiKey && requiresApiKey(model)) throw new ProviderError(missingApiKeyMessage(provider));
	return {
		url: `${model.baseUrl.replace(/\/+$/, "")}/${path}`,
		headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
	};
}

/** `streamSimple` options → an OpenAI API's options: `reasoning` → `reasoningEffort` (through the model's `thinkingLevelMap`). */
export function withReasoningEffort<T extends StreamOptions & { reasoningEffort?: ThinkingLevel | (string & {}) }>(
	model: Model<any>,
	options: SimpleStreamOptions = {},
): T {
	const base = buildBaseOptions(model, options) as T;
	const effort = model.reasoning ? reasoningEffortFor(model, options.reasoning) : undefined;
	if (effort) base.reasoningEffort = effort;
	return base;
}

/** An image as a `data:` URL, the form both APIs accept inline. */
export function imageDataUrl(image: ImageContent): string {
	return `data:${image.mimeType};base64,${image.data}`;
}

/**
 * Token counts from an OpenAI usage object's numbers: `input` excludes the cached part
 * (`cacheRead`); a missing total is input + output. Non-numbers count as 0.
 */
export function openAITokenCounts(input: unknown, cached: unknown, output: unknown, total: unknown): TokenCounts {
	const inputTokens = num(input);
	const cachedTokens = num(cached);
	const outputTokens = num(output);
	return {
		input: Math.max(0, inputTokens - cachedTokens),
		output: outputTokens,
		cacheRead: cachedTokens,
		cacheWrite: 0,
		totalTokens: num(total) || inputTokens + outputTokens,
	};
}

function num(value: unknown): number {
	return typeof value === "number" && Number.isFinite(value) ? value : 0;
}
