/**
 * Debian's Chromium for browser tests, driven by playwright-core (never a browser download).
 * Where it is missing the tests skip with one line; with `TEST_REQUIRE_ALL=1` (CI) that is an
 * error instead, so a machine that should have it cannot pass by skipping.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Whether Chromium is there; throws when it is not and `TEST_REQUIRE_ALL=1`. */
export function haveChromium(): boolean {
	if (existsSync(CHROMIUM)) return true;
	if (process.env.TEST_REQUIRE_ALL === "1") {
		throw new Error(
			`TEST_REQUIRE_ALL=1 and no Chromium at ${CHROMIUM} (install the chromium package or set CHROMIUM_PATH)`,
		);
	}
	return false;
}

/** The skip line of a test that needs Chromium, or its own title. */
export function chromiumTitle(title: string): string {
	return existsSync(CHROMIUM) ? title : `${title}: skipped, no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)`;
}

/**
 * A headless Chromium with a fresh profile; `close()` also removes the profile. The flags keep it
 * off the network it has no business with (this machine's network is closed).
 */
export async function launchChromium(): Promise<{ browser: BrowserContext; close(): Promise<void> }> {
	const profile = mkdtempSync(path.join(tmpdir(), "wheelhouse-chromium-"));
	const browser = await chromium.launchPersistentContext(profile, {
		executablePath: CHROMIUM,
		headless: true,
		args: [
			"--headless",
			"--no-sandbox",
			"--disable-gpu",
			"--disable-quic",
			"--no-first-run",
			"--disable-background-networking",
			"--disable-component-update",
			"--disable-sync",
			"--no-proxy-server",
		],
	});
	return {
		browser,
		async close() {
			await browser.close();
			rmSync(profile, { recursive: true, force: true });
		},
	};
}
