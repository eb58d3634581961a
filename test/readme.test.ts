/**
 * The README is the front door and `docs/` the reference: the README stays short enough to read
 * (under 15 KB), links every page of `docs/`, and no relative link of the README or of a docs page
 * leads nowhere — each file it names exists, and each `#anchor` is a heading of its target, with the
 * slugs GitHub gives headings.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repoRoot = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const readmePath = path.join(repoRoot, "README.md");
const docsDir = path.join(repoRoot, "docs");
const docPages = readdirSync(docsDir)
	.filter((name) => name.endsWith(".md"))
	.sort();

/** The text outside fenced code blocks (a `# comment` in a shell block is not a heading). */
function prose(markdown: string): string {
	return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
}

/** Link targets of `[text](target)` and `![alt](target)` in the prose. */
function linkTargets(markdown: string): string[] {
	return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
	const seen = new Map<string, number>();
	const result = new Set<string>();
	for (const [, text] of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
		const base = text!
			.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
			.toLowerCase()
			.replace(/[^\p{L}\p{N}\s_-]/gu, "")
			.replace(/\s/g, "-");
		const count = seen.get(base) ?? 0;
		seen.set(base, count + 1);
		result.add(count === 0 ? base : `${base}-${count}`);
	}
	return result;
}

/** Each relative link of `file` that does not resolve, with the reason. */
function brokenLinks(file: string): string[] {
	const text = readFileSync(file, "utf8");
	const broken: string[] = [];
	for (const target of linkTargets(text)) {
		if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
		const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined];
		const resolved = pathPart === "" ? file : path.resolve(path.dirname(file), decodeURIComponent(pathPart));
		if (!existsSync(resolved)) {
			broken.push(`${target}: no such file`);
			continue;
		}
		if (anchor === undefined || !resolved.endsWith(".md") || statSync(resolved).isDirectory()) continue;
		if (!anchors(readFileSync(resolved, "utf8")).has(anchor)) broken.push(`${target}: no heading #${anchor}`);
	}
	return broken;
}

describe("README.md, the front door", () => {
	const readme = readFileSync(readmePath, "utf8");

	it("is under 15 KB", () => {
		expect(Buffer.byteLength(readme)).toBeLessThan(15 * 1024);
	});

	it("links every page of docs/", () => {
		const linked = new Set(
			linkTargets(readme)
				.map((target) => target.split("#")[0]!)
				.filter((target) => target.startsWith("docs/") && target.endsWith(".md"))
				.map((target) => target.slice("docs/".length)),
		);
		expect(docPages.filter((page) => !linked.has(page))).toEqual([]);
		expect(docPages.length).toBeGreaterThan(10);
	});

	it("keeps the quick start: install and start, install and test", () => {
		const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
		expect(blocks).toContain("npm ci && npm start");
		expect(blocks).toContain("npm ci && npm test");
	});
});

describe("relative links", () => {
	it.each(["README.md", ...docPages.map((page) => `docs/${page}`)])(
		"%s: every file and heading it links exists",
		(file) => {
			expect(brokenLinks(path.join(repoRoot, file))).toEqual([]);
		},
	);
});
