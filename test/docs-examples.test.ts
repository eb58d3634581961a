/**
 * Every example a reader may paste from README.md and docs/*.md is either run as pasted by a test or
 * says, visibly, why it is not run here. The last non-blank line before each fenced block is its
 * marker (CONTRIBUTING.md, "Examples in the docs"):
 * - `<!-- tested by test/….test.ts -->`: that test file exists and reads this page;
 * - `*Not run by the tests: reason.*`: shown to the reader, with the reason (Docker, a provider key…).
 * Blocks in `text` are output or diagrams, not something to paste, and need no marker; a block with
 * no language must say `text` if that is what it is. docs/errors.md is generated and has no examples.
 * Pages added to docs/ later are checked the same way.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { docBlocks } from "./helpers/doc-blocks.js";
import { repoRoot } from "./helpers/main-process.js";

const pages = [
	"README.md",
	...readdirSync(path.join(repoRoot, "docs"))
		.filter((name) => name.endsWith(".md") && name !== "errors.md")
		.sort()
		.map((name) => `docs/${name}`),
];

describe("examples in the docs", () => {
	it.each(pages)("%s: each block is tested as pasted or says why not", (page) => {
		const problems: string[] = [];
		for (const block of docBlocks(page)) {
			const where = `${page}:${block.line} (${block.lang || "no language"}, under "${block.heading}")`;
			if (block.lang === "text") continue;
			if (block.lang === "") {
				problems.push(`${where}: give the fence a language (\`text\` for output)`);
				continue;
			}
			if (block.testedBy) {
				const test = path.join(repoRoot, block.testedBy);
				if (!existsSync(test)) problems.push(`${where}: ${block.testedBy} does not exist`);
				else if (!readFileSync(test, "utf8").includes(page))
					problems.push(`${where}: ${block.testedBy} does not read ${page}`);
				continue;
			}
			if (block.notRun) continue;
			problems.push(
				`${where}: mark it <!-- tested by test/….test.ts --> (a test runs it as pasted) or *Not run by the tests: reason.*`,
			);
		}
		expect(problems).toEqual([]);
	});
});
