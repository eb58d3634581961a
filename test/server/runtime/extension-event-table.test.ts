/**
 * The table that routes agent events to session extensions: registration order across extensions
 * that name types and ones that take every type, and the `onFirstUpdate` list.
 */
import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../../../src/agent/types.js";
import { ExtensionEventTable } from "../../../src/server/runtime/session/extension-events.js";

type Ext = { name: string; onEvent?: () => void; onFirstUpdate?: () => void; events?: AgentEvent["type"][] };
const hook = () => {};

function names(list: readonly Ext[]): string[] {
	return list.map((ext) => ext.name);
}

describe("ExtensionEventTable", () => {
	it("keeps registration order whether an extension names its types or takes them all", () => {
		const table = new ExtensionEventTable<Ext>([
			{ name: "a", onEvent: hook, events: ["agent_end"] },
			{ name: "all-1", onEvent: hook },
			{ name: "c", onEvent: hook, events: ["agent_end", "agent_start", "agent_end"] },
			{ name: "all-2", onEvent: hook },
			{ name: "d", onEvent: hook, events: ["turn_start"] },
		]);
		expect(names(table.forType("agent_end"))).toEqual(["a", "all-1", "c", "all-2"]);
		expect(names(table.forType("agent_start"))).toEqual(["all-1", "c", "all-2"]);
		expect(names(table.forType("turn_start"))).toEqual(["all-1", "all-2", "d"]);
		// A type no extension named: only those that take every type.
		expect(names(table.forType("message_update"))).toEqual(["all-1", "all-2"]);
	});

	it("leaves out extensions without onEvent, and an empty list takes nothing", () => {
		const table = new ExtensionEventTable<Ext>([
			{ name: "no-hook", events: ["agent_end"] },
			{ name: "no-hook-all" },
			{ name: "none", onEvent: hook, events: [] },
			{ name: "first", onFirstUpdate: hook },
			{ name: "both", onEvent: hook, onFirstUpdate: hook, events: ["message_end"] },
		]);
		expect(names(table.forType("agent_end"))).toEqual([]);
		expect(names(table.forType("message_update"))).toEqual([]);
		expect(names(table.forType("message_end"))).toEqual(["both"]);
		expect(names(table.firstUpdateHooks)).toEqual(["first", "both"]);
	});
});
