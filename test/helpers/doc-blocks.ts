/**
 * The fenced code blocks of a markdown page (README.md, docs/*.md), each with the marker line that
 * says how it is checked: `<!-- tested by test/….test.ts -->` (a test runs it as pasted) or a
 * visible `*Not run by the tests: reason.*` (it needs what the tests do not have here). The marker
 * is the last non-blank line before the opening fence. Tests take the blocks they run from here.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "./main-process.js";

export interface DocBlock {
	/** The page, relative to the repository root (`docs/cluster.md`). */
	page: string;
	/** 1-based line of the opening fence. */
	line: number;
	/** The fence's info string (`sh`, `ts`, `json`, `text`…); empty when none. */
	lang: string;
	/** The block's text, with its final newline. */
	code: string;
	/** The nearest heading above the block. */
	heading: string;
	/** The test file the marker names, when the block is tested. */
	testedBy?: string;
	/** Why it is not run, when the marker says so. */
	notRun?: string;
}

export const TESTED_MARKER = /^<!-- tested by (\S+\.test\.ts) -->$/;
export const NOT_RUN_MARKER = /^\*Not run by the tests: (.+)\*$/;

/** Every fenced block of `page` (a path relative to the repository root), in order. */
export function docBlocks(page: string): DocBlock[] {
	const lines = readFileSync(path.join(repoRoot, page), "utf8").split("\n");
	const blocks: DocBlock[] = [];
	let heading = "";
	let lastText = "";
	for (let i = 0; i < lines.length; i++) {
		const text = lines[i]!;
		const fence = /^(```+|~~~+)\s*(\S*)/.exec(text);
		if (!fence) {
			if (/^#{1,6}\s/.test(text)) heading = text.replace(/^#+\s*/, "");
			if (text.trim() !== "") lastText = text.trim();
			continue;
		}
		const close = fence[1]!;
		const start = i;
		const body: string[] = [];
		for (i++; i < lines.length && !lines[i]!.startsWith(close); i++) body.push(lines[i]!);
		const block: DocBlock = { page, line: start + 1, lang: fence[2]!, code: `${body.join("\n")}\n`, heading };
		const tested = TESTED_MARKER.exec(lastText);
		const notRun = NOT_RUN_MARKER.exec(lastText);
		if (tested) block.testedBy = tested[1]!;
		if (notRun) block.notRun = notRun[1]!;
		blocks.push(block);
		lastText = "";
	}
	return blocks;
}

/** The one block of `page` in `lang` whose text contains `marker` (fails loudly on none or several). */
export function docBlock(page: string, lang: string, marker: string): DocBlock {
	const found = docBlocks(page).filter((b) => b.lang === lang && b.code.includes(marker));
	if (found.length !== 1)
		throw new Error(`${page}: ${found.length} ${lang} blocks contain ${JSON.stringify(marker)}, expected one`);
	return found[0]!;
}
