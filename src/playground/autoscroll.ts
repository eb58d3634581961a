/**
 * Keeps a scrolling container at its newest content: it follows new content while the reader is
 * at the bottom, and stays where the reader scrolled to otherwise (offering a "jump to latest"
 * button that appears only while there is something below).
 */

/** How close to the bottom (px) still counts as "at the bottom". */
const NEAR_BOTTOM_PX = 48;

export interface Follower {
	/** Call after adding content: scrolls to the bottom when the reader was there. */
	added(): void;
	/** Scrolls to the bottom and follows again. */
	jump(): void;
}

/**
 * Follows `container` (which must be the element that scrolls). `jumpButton` is shown while new
 * content arrived below the reader's position, and jumps there when pressed.
 */
export function follow(container: HTMLElement, jumpButton?: HTMLButtonElement): Follower {
	let atBottom = true;
	const nearBottom = () => container.scrollHeight - container.scrollTop - container.clientHeight <= NEAR_BOTTOM_PX;
	const jump = () => {
		container.scrollTop = container.scrollHeight;
		atBottom = true;
		if (jumpButton) jumpButton.hidden = true;
	};
	container.addEventListener(
		"scroll",
		() => {
			atBottom = nearBottom();
			if (atBottom && jumpButton) jumpButton.hidden = true;
		},
		{ passive: true },
	);
	jumpButton?.addEventListener("click", jump);
	return {
		added() {
			if (atBottom) {
				container.scrollTop = container.scrollHeight;
			} else if (jumpButton && !nearBottom()) {
				jumpButton.hidden = false;
			}
		},
		jump,
	};
}
