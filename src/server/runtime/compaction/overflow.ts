/**
 * Recognises a provider's "the context is too long" error in a failed answer, from the error texts
 * the providers send (the drivers put the provider's own message in `errorMessage`, after
 * `HTTP <status>: `, and its error type or code in the `http_error` diagnostic).
 */
import type { AssistantMessage } from "../../../ai/types.js";

/** Error texts of an overflowing context, with the provider that sends each. */
const OVERFLOW_PATTERNS: readonly RegExp[] = [
	/prompt is too long/i, // Anthropic: "prompt is too long: 213462 tokens > 200000 maximum"
	/request_too_large/i, // Anthropic, a body over its byte limit (HTTP 413)
	/exceeds the context window/i, // OpenAI Responses: "Your input exceeds the context window of this model"
	/maximum context length is \d+ tokens/i, // OpenAI Chat Completions, OpenRouter, vLLM
	/context[_ ]length[_ ]exceeded/i, // OpenAI's error code, and servers that copy it
	/input token count.*exceeds the maximum/i, // Gemini: "The input token count (1196265) exceeds the maximum number of tokens allowed (1048576)"
	/reduce the length of the messages/i, // Groq, OpenAI
	/maximum prompt length is \d+/i, // xAI
	/exceeds the available context size/i, // llama.cpp server
	/greater than the context length/i, // LM Studio
	/prompt too long; exceeded (?:max )?context length/i, // Ollama
	/too large for model with \d+ maximum context length/i, // Mistral
];

/** Texts that look alike but mean a rate limit, which compacting would not cure. */
const NOT_OVERFLOW: readonly RegExp[] = [/rate limit/i, /too many requests/i];

/** True when `message` failed because its context did not fit the model's window. */
export function isContextOverflow(message: AssistantMessage): boolean {
	if (message.stopReason !== "error") return false;
	const text = message.errorMessage ?? "";
	if (NOT_OVERFLOW.some((pattern) => pattern.test(text))) return false;
	if (OVERFLOW_PATTERNS.some((pattern) => pattern.test(text))) return true;
	return (message.diagnostics ?? []).some(
		(d) => d.type === "http_error" && typeof d.errorType === "string" && /context_length_exceeded/i.test(d.errorType),
	);
}
