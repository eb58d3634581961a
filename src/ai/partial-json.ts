/**
 * Tool-call arguments from JSON text, whether it is still streaming or was cut short: always an
 * object, never a throw.
 */
import { Allow, parse } from "partial-json";

/**
 * Parses tool-call arguments while they stream: `{"city": "Mex` → `{ city: "Mex" }`.
 *
 * Contract: never throws. Returns `{}` for empty or unparseable text and for JSON that is not an
 * object (tool arguments are always an object).
 */
export function parseStreamingJson(text: string | undefined): Record<string, any> {
	if (!text) return {};
	try {
		return asObject(parse(text, Allow.ALL));
	} catch {
		return {};
	}
}

/**
 * Parses the complete arguments of a finished tool call: exact `JSON.parse`, falling back to the
 * partial parser when a provider cut the JSON short (e.g. a `length` stop inside a tool call).
 *
 * Contract: never throws; `{}` when nothing usable is there.
 */
export function parseToolArguments(text: string | undefined): Record<string, any> {
	if (!text || text.trim() === "") return {};
	try {
		return asObject(JSON.parse(text));
	} catch {
		return parseStreamingJson(text);
	}
}

function asObject(value: unknown): Record<string, any> {
	return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, any>) : {};
}
