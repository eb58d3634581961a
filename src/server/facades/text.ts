/**
 * The text of message content as the facades show it: the text blocks joined as they are, images
 * and other blocks left out.
 */

/** The text of content blocks (a string is its own text). */
export function textOf(blocks: string | readonly { type: string; text?: string }[]): string {
	if (typeof blocks === "string") return blocks;
	let text = "";
	for (const block of blocks) if (block.type === "text") text += block.text ?? "";
	return text;
}
