/**
 * `item_reference` input items of the Responses API: an item of an earlier response, named by its
 * id instead of sent again (the AI SDK sends them when a caller appends `response.messages` of an
 * earlier call). Each is replaced by the item the server produced, from the stored responses of
 * the same key; one that names no such item is a 400 naming the field.
 */
import { apiError, quote } from "../../http/errors.js";
import type { OutputItem } from "./responses-encoding.js";

type Json = Record<string, unknown>;

/** An output item as the input item that stands for it (what a client would send instead of the reference). */
function asInput(item: OutputItem): Json | undefined {
	switch (item.type) {
		case "message":
			return { type: "message", role: "assistant", content: item.content };
		case "function_call":
			return { type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments };
		default:
			// A server tool call that ran (`mcp_call`) is shown to clients, not part of the conversation's input.
			return undefined;
	}
}

/** `input` with its item references replaced; the input itself when it has none. */
export async function resolveItemReferences(
	input: unknown,
	find: (id: string) => Promise<OutputItem | undefined>,
): Promise<unknown> {
	if (!Array.isArray(input) || !input.some((item) => (item as Json | null)?.type === "item_reference")) return input;
	const out: unknown[] = [];
	for (const [i, item] of (input as (Json | null)[]).entries()) {
		if (item?.type !== "item_reference") {
			out.push(item);
			continue;
		}
		const id = item.id;
		if (typeof id !== "string" || id === "")
			throw apiError("VALIDATION_FAILED", `body.input[${i}].id: an item_reference needs the id of an item`);
		const found = await find(id);
		if (!found) {
			throw apiError(
				"VALIDATION_FAILED",
				`body.input[${i}].id: no item ${quote(id)} of a response of this server (this key's responses, from their session's lifetime); send the item itself instead`,
			);
		}
		const replacement = asInput(found);
		if (replacement) out.push(replacement);
	}
	return out;
}
