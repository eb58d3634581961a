/**
 * Which tools may be run again with the same arguments when their first call's result was lost
 * (the process running it died before the result was stored): a tool says so with
 * `idempotent: true`. HTTP and MCP tools take it from their config (default false), the built-in
 * tools set it themselves, a library tool sets the field on its `AgentTool`.
 */
import type { AgentTool } from "../agent/types.js";

/**
 * The field a tool sets. Contract: `true` only when a second call with the same arguments has no
 * effect beyond the first one's (a read, a lookup, a pure computation, a write keyed by its own id).
 */
export interface IdempotentMark {
	idempotent?: boolean;
}

/** Whether `tool` declares itself idempotent (absent: it does not). */
export function isIdempotentTool(tool: AgentTool<any>): boolean {
	return (tool as IdempotentMark).idempotent === true;
}
