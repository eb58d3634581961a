/**
 * The setup every playground browser test file shares: the playground built once into a temporary
 * folder, and one headless Chromium for the file (when the machine has it, see chromium.ts), both
 * made in a `beforeAll` and removed in an `afterAll`. Call it at the top of the file, before the
 * file's own hooks: its `beforeAll` then runs first (the assets exist when the file starts its
 * servers) and its `afterAll` last (vitest runs after-hooks in reverse).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { buildPlayground } from "../../scripts/build-playground.js";
import { haveChromium, launchChromium } from "./chromium.js";

export interface PlaygroundInBrowser {
	/** Whether Chromium is there: the file's browser tests skip without it. */
	readonly haveChromium: boolean;
	/** The built playground (a server's `playgroundDir`); set once the file's first hook ran. */
	readonly assets: string;
	/** The file's browser; throws where there is no Chromium (such tests skip). */
	readonly browser: BrowserContext;
}

export function playgroundInBrowser(name: string): PlaygroundInBrowser {
	const have = haveChromium();
	let assets: string | undefined;
	let chromium: Awaited<ReturnType<typeof launchChromium>> | undefined;
	beforeAll(async () => {
		assets = mkdtempSync(path.join(tmpdir(), `wheelhouse-${name}-`));
		await buildPlayground(assets);
		if (have) chromium = await launchChromium();
	}, 60_000);
	afterAll(async () => {
		await chromium?.close();
		if (assets) rmSync(assets, { recursive: true, force: true });
	});
	return {
		haveChromium: have,
		get assets() {
			if (!assets) throw new Error("the playground is built in beforeAll: read assets inside a hook or test");
			return assets;
		},
		get browser() {
			if (!chromium) throw new Error("no Chromium on this machine: the test should have skipped");
			return chromium.browser;
		},
	};
}
