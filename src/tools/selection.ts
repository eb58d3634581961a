/**
 * Which server tools a session enables: its `tools` config is a list of selectors, each an exact
 * tool name or a `prefix*` pattern (`"*"`: every tool; `"files__*"`: every tool of the MCP server
 * `files`). Patterns are matched whenever the session's tools are resolved, so a tool that appears
 * later (an MCP server that connects or lists a new tool) is enabled in the sessions whose
 * patterns match it, from their next run.
 */

/** What a session enables when its `tools` is left out: every server tool, current and future. */
export const ALL_TOOLS = "*";

/** True for a `prefix*` selector. */
export function isToolPattern(selector: string): boolean {
	return selector.endsWith("*");
}

/**
 * Why `selector` is malformed, or undefined when it is fine: a `*` may only end a pattern.
 * (Whether an exact name exists is the caller's check: it depends on the tools registered.)
 */
export function selectorProblem(selector: string): string | undefined {
	const star = selector.indexOf("*");
	if (star >= 0 && star !== selector.length - 1) {
		return `"${selector}": "*" may only end a pattern (e.g. "files__*", or "*" for every tool)`;
	}
	return undefined;
}

/** The names in `available` (in its order) that `selectors` enable. */
export function selectTools(selectors: readonly string[], available: Iterable<string>): string[] {
	const exact = new Set<string>();
	const prefixes: string[] = [];
	for (const s of selectors) {
		if (isToolPattern(s)) prefixes.push(s.slice(0, -1));
		else exact.add(s);
	}
	const selected: string[] = [];
	for (const name of available) {
		if (exact.has(name) || prefixes.some((p) => name.startsWith(p))) selected.push(name);
	}
	return selected;
}
