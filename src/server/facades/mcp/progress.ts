/**
 * The progress notifications of one tool call: the answer's text deltas, coalesced. Each
 * notification costs the SDK's transport far more than the delta it carries (a web stream write
 * per message), so deltas that arrive within {@link PROGRESS_EVERY_MS} of the last notification
 * go out together: `progress` is the answer's length in characters so far and `message` the text
 * since the last notification.
 */

/** The least time between two progress notifications of a call. */
export const PROGRESS_EVERY_MS = 50;

export type SendProgress = (params: { progress: number; message: string }) => void;

export class ProgressBatcher {
	private pending = "";
	private sent = 0;
	private lastAt = 0;
	private timer: NodeJS.Timeout | undefined;

	constructor(private readonly send: SendProgress) {}

	/** A text delta of the answer. */
	add(text: string): void {
		this.pending += text;
		const wait = this.lastAt + PROGRESS_EVERY_MS - Date.now();
		if (wait <= 0) this.flush();
		else this.timer ??= setTimeout(() => this.flush(), wait);
	}

	/** Sends what waits now (the call's result follows). */
	flush(): void {
		clearTimeout(this.timer);
		this.timer = undefined;
		if (this.pending === "") return;
		this.sent += this.pending.length;
		this.lastAt = Date.now();
		const message = this.pending;
		this.pending = "";
		this.send({ progress: this.sent, message });
	}
}
