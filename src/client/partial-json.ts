import { parse as parsePartial } from "partial-json";

/**
 * Parses the argument JSON of a tool call that is still streaming, as the providers do: the full
 * text when it is already valid, otherwise the longest valid prefix (`{"a":"hel` → `{a:"hel"}`).
 * Always returns an object (`{}` for empty or unparseable text), so a UI can render every step.
 */
export function parseStreamingJson(text: string): Record<string, any> {
	if (text.trim() === "") return {};
	try {
		return toObject(JSON.parse(text));
	} catch {
		try {
			return toObject(parsePartial(text));
		} catch {
			return {};
		}
	}
}

function toObject(value: unknown): Record<string, any> {
	return value !== null && typeof value === "object" ? (value as Record<string, any>) : {};
}
