/**
 * The event timeline on the right: one collapsed entry per received event (its id and type; the
 * JSON is rendered when first opened) and the type filter (`word` includes, `-word` excludes).
 */
import type { ReceivedEvent } from "../client/index.js";
import { el } from "./render.js";

/** Timeline entries kept; older ones are removed (the server's log keeps them). */
export const MAX_TIMELINE = 5000;

/** The timeline entry of one event. */
export function timelineItem(event: ReceivedEvent): HTMLElement {
	const item = el("li");
	item.dataset.type = event.type;
	if (event.id !== undefined) item.dataset.id = String(event.id);
	const details = el("details");
	const summary = el("summary");
	summary.append(el("span", "id", event.id === undefined ? "–" : `#${event.id}`), ` ${event.type}`);
	details.append(summary);
	// The JSON is rendered when first opened: most entries never are.
	details.addEventListener(
		"toggle",
		() => {
			if (details.open && details.childElementCount === 1)
				details.append(el("pre", undefined, JSON.stringify(event.data, null, 2)));
		},
		{ passive: true },
	);
	item.append(details);
	return item;
}

/** Hides `item` unless its event type passes `filter` (space-separated words; `-word` excludes). */
export function applyTimelineFilter(item: HTMLElement, filter: string): void {
	const terms = filter.trim().split(/\s+/).filter(Boolean);
	const type = item.dataset.type ?? "";
	const include = terms.filter((t) => !t.startsWith("-"));
	const exclude = terms.filter((t) => t.startsWith("-")).map((t) => t.slice(1));
	item.hidden =
		(include.length > 0 && !include.some((t) => type.includes(t))) || exclude.some((t) => t && type.includes(t));
}
