/**
 * `toolCallsOf`: the tool calls of a transcript by id, with their tool names (what the AG-UI and
 * OpenAI facades look a client's tool result up in).
 */
import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../../src/agent/types.js";
import { toolCallsOf } from "../../../src/server/runtime/session/tool-calls.js";

describe("toolCallsOf", () => {
	it("maps each call of every assistant message to its tool, and nothing else", () => {
		const messages = [
			{ role: "user", content: [{ type: "text", text: "hi" }], timestamp: 1 },
			{
				role: "assistant",
				content: [
					{ type: "text", text: "calling" },
					{ type: "toolCall", id: "c1", name: "pick_color", arguments: {} },
					{ type: "toolCall", id: "c2", name: "calculate", arguments: { expression: "1+1" } },
				],
			},
			{ role: "toolResult", toolCallId: "c1", toolName: "pick_color", content: [], isError: false, timestamp: 2 },
			{ role: "assistant", content: [{ type: "toolCall", id: "c3", name: "ask_user", arguments: {} }] },
			// A call without an id or a name names nothing.
			{ role: "assistant", content: [{ type: "toolCall", id: "", name: "x", arguments: {} }] },
			{ role: "custom", content: "not a message with blocks" },
		] as unknown as AgentMessage[];
		expect([...toolCallsOf(messages)]).toEqual([
			["c1", "pick_color"],
			["c2", "calculate"],
			["c3", "ask_user"],
		]);
		expect(toolCallsOf([]).size).toBe(0);
	});
});
