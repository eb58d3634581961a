/**
 * The event timeline on the right: one collapsed entry per received event (its id and type; the
 * JSON is rendered when first opened), a run of `message_update` events folded into one entry
 * (they are the streaming deltas: dozens per answer), and the type filter (`word` includes,
 * `-word` excludes).
 */
import type { ReceivedEvent } from "../client/index.js";
import { el } from "./render.js";

/** Timeline entries kept; older ones are removed (the server's log keeps them). */
export const MAX_TIMELINE = 5000;

/** The event type whose consecutive entries fold into one. */
const FOLDED = "message_update";

/** The timeline entry of one event. */
export function timelineItem(event: ReceivedEvent): HTMLElement {
	const item = el("li");
	item.dataset.type = event.type;
	if (event.id !== undefined) item.dataset.id = String(event.id);
	const details = el("details");
	const summary = el("summary");
	summary.append(el("span", "id", event.id === undefined ? "–" : `#${event.id}`), el("span", "type", ` ${event.type}`));
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

/** A folded run of `message_update` entries: how many, the first id, and the latest event. */
type Fold = { count: number; firstId: number | undefined; latest: ReceivedEvent };

/**
 * The timeline list: adds entries (folding `message_update` runs), inserts a reopened session's
 * earlier events before the live ones, and keeps at most {@link MAX_TIMELINE} entries.
 */
export class Timeline {
	private readonly folds = new WeakMap<HTMLElement, Fold>();

	constructor(
		private readonly list: HTMLElement,
		private readonly filter: () => string,
	) {}

	/** Adds `event` at the end; returns whether a new entry was made (else it joined a fold). */
	add(event: ReceivedEvent): boolean {
		const last = this.list.lastElementChild as HTMLElement | null;
		if (last && this.join(last, event)) return false;
		this.list.append(this.entry(event));
		while (this.list.childElementCount > MAX_TIMELINE) this.list.firstElementChild?.remove();
		return true;
	}

	/** Puts events that came before the first entry (a reopened session's history) in front of it. */
	prepend(events: ReceivedEvent[]): void {
		const fragment = el("ol");
		let last: HTMLElement | null = null;
		for (const event of events.slice(-MAX_TIMELINE)) {
			if (last && this.join(last, event)) continue;
			last = this.entry(event);
			fragment.append(last);
		}
		this.list.prepend(...fragment.children);
		while (this.list.childElementCount > MAX_TIMELINE) this.list.lastElementChild?.remove();
	}

	/** Applies the filter to every entry again (after it changed). */
	refilter(): void {
		for (const item of this.list.children) applyTimelineFilter(item as HTMLElement, this.filter());
	}

	private entry(event: ReceivedEvent): HTMLElement {
		const item = event.type === FOLDED ? this.foldItem(event) : timelineItem(event);
		applyTimelineFilter(item, this.filter());
		return item;
	}

	/** Adds `event` to `item` when both are `message_update`; returns whether it did. */
	private join(item: HTMLElement, event: ReceivedEvent): boolean {
		const fold = event.type === FOLDED ? this.folds.get(item) : undefined;
		if (!fold) return false;
		fold.count++;
		fold.latest = event;
		this.label(item, fold, event.id);
		const open = item.querySelector("details");
		if (open?.open) this.showLatest(open, fold);
		return true;
	}

	private foldItem(event: ReceivedEvent): HTMLElement {
		const item = el("li");
		item.dataset.type = event.type;
		if (event.id !== undefined) item.dataset.id = String(event.id);
		const fold: Fold = { count: 1, firstId: event.id, latest: event };
		this.folds.set(item, fold);
		const details = el("details");
		details.append(el("summary"));
		details.addEventListener(
			"toggle",
			() => {
				if (!details.open) return;
				if (details.childElementCount === 1) details.append(el("p", "hint"), el("pre"));
				this.showLatest(details, fold);
			},
			{ passive: true },
		);
		item.append(details);
		this.label(item, fold, event.id);
		return item;
	}

	/** An opened fold shows its latest event (each carries the whole message so far). */
	private showLatest(details: HTMLElement, fold: Fold): void {
		const hint = details.querySelector("p");
		const pre = details.querySelector("pre");
		if (hint) hint.textContent = fold.count > 1 ? `The latest of ${fold.count} updates:` : "";
		if (pre) pre.textContent = JSON.stringify(fold.latest.data, null, 2);
	}

	private label(item: HTMLElement, fold: Fold, lastId: number | undefined): void {
		const summary = item.querySelector("summary")!;
		const range =
			fold.firstId === undefined
				? "–"
				: fold.count > 1 && lastId !== undefined
					? `#${fold.firstId}–${lastId}`
					: `#${fold.firstId}`;
		summary.replaceChildren(
			el("span", "id", range),
			el("span", "type", ` ${FOLDED}`),
			...(fold.count > 1 ? [el("span", "count", ` ×${fold.count}`)] : []),
		);
		item.dataset.count = String(fold.count);
	}
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
