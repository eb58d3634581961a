/**
 * Where a compaction cuts a view: the messages before the cut are summarised, the ones from it on
 * are kept verbatim.
 */
import type { AgentMessage } from "../../../agent/types.js";
import { estimateTokens } from "./tokens.js";

/**
 * A kept part may start at a user or assistant message (or a custom one), never at a tool result:
 * cutting there would keep a result whose call was summarised away. Starting at an assistant
 * message keeps it together with the results of its tool calls, which follow it.
 */
function canStartAt(message: AgentMessage): boolean {
	return (message as { role?: string }).role !== "toolResult";
}

/**
 * The index in `view` of the first message to keep, so that the kept messages hold about
 * `keepTokens` tokens (at least that many, or the whole latest turn), or undefined when there is
 * nothing before it to summarise. `from` is the first index that may be summarised (1 when
 * `view[0]` is the previous summary, which is folded in anyway).
 *
 * From the end backwards, estimates add up until they reach `keepTokens`; the cut goes to the
 * nearest allowed start at or after that message, else the nearest before it.
 */
export function chooseCut(view: readonly AgentMessage[], from: number, keepTokens: number): number | undefined {
	let kept = 0;
	let reachedAt = -1;
	for (let i = view.length - 1; i >= from; i--) {
		kept += estimateTokens(view[i] as AgentMessage);
		if (kept >= keepTokens) {
			reachedAt = i;
			break;
		}
	}
	if (reachedAt < 0) return undefined;
	for (let i = reachedAt; i < view.length; i++)
		if (canStartAt(view[i] as AgentMessage)) return i > from ? i : undefined;
	for (let i = reachedAt - 1; i > from; i--) if (canStartAt(view[i] as AgentMessage)) return i;
	return undefined;
}
