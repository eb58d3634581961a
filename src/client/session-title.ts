/**
 * A session's title as the playground and the CLI give it: made from its first prompt and kept in
 * the session's metadata, so a session named by one is named the same in the other.
 */

/** The metadata key of a session's title. */
export const TITLE_KEY = "title";

/** Longest title made from a prompt. */
const TITLE_MAX = 80;

/** A title from a prompt: its first non-empty line, shortened to {@link TITLE_MAX} characters. */
export function titleFrom(prompt: string): string {
	// Markdown's emphasis and code marks read badly in a list: the words stay, the marks go.
	const line = (prompt.split("\n").find((l) => l.trim() !== "") ?? "").replace(/[*_`#>]+/g, "").trim();
	return line.length > TITLE_MAX ? `${line.slice(0, TITLE_MAX - 1)}…` : line;
}
