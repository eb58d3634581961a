/**
 * A graceful restart as Chromium's own `EventSource` lives it: a page holds an EventSource on a
 * session's stream, the server process gets SIGTERM while a run streams, a new process starts on
 * the same port and SQLite file, and the same EventSource reconnects by itself with
 * `Last-Event-ID` and receives the next run. Real child processes and a real browser.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { chromiumTitle, haveChromium, launchChromium } from "../../helpers/chromium.js";
import { json, startMain, stopAll } from "../../helpers/main-process.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
	stopAll();
});

interface Seen {
	type: string;
	id: number;
	text?: string;
}

describe("graceful restart with Chromium's EventSource", () => {
	it.skipIf(!haveChromium())(
		chromiumTitle("reconnects by itself to the next process and receives the next run, every id once"),
		{ timeout: 120_000 },
		async () => {
			const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-chromium-restart-"));
			cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
			const db = path.join(dir, "wheelhouse.db");
			const env = { WHEELHOUSE_SSE_RETRY_MS: "100" };
			const first = await startMain({ db, env: { ...env, WHEELHOUSE_FAUX_DELAY_MS: "40" } });
			const id = (await json(`${first.url}/v1/sessions`, "POST", {})).body.id;

			const chromium = await launchChromium();
			cleanups.push(() => chromium.close());
			const page = await chromium.browser.newPage();
			// A page of the server's own origin (the spec is public), so the stream is same-origin.
			await page.goto(`${first.url}/openapi.json`);
			await page.evaluate((url) => {
				const g = globalThis as any;
				g.seen = [] as Seen[];
				g.source = new g.EventSource(url);
				for (const type of ["session_snapshot", "agent_start", "message_end", "agent_end"]) {
					g.source.addEventListener(type, (event: any) => {
						const data = JSON.parse(event.data);
						const text = type === "agent_end" ? data.messages?.at(-1)?.content?.[0]?.text : undefined;
						g.seen.push({ type, id: Number(event.lastEventId), text });
					});
				}
			}, `${first.url}/v1/sessions/${id}/events`);
			const seen = () => page.evaluate(() => (globalThis as any).seen as Seen[]);
			const waitFor = (predicate: string) =>
				page.waitForFunction(`(globalThis.seen ?? []).some((e) => ${predicate})`, undefined, { timeout: 30_000 });
			await waitFor(`e.type === "session_snapshot"`);

			const words = Array.from({ length: 15 }, (_, i) => `w${i}`).join(" ");
			expect((await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: words })).status).toBe(202);
			await waitFor(`e.type === "agent_start"`);
			first.child.kill("SIGTERM");
			await waitFor(`e.type === "agent_end"`);
			const firstEnd = (await seen()).find((e) => e.type === "agent_end")!;
			expect(firstEnd.text).toBe(words);
			expect(await first.exited, first.output()).toEqual({ code: 0, signal: null });

			const second = await startMain({ db, port: first.port, env });
			expect(
				(await json(`${second.url}/v1/sessions/${id}/prompt`, "POST", { message: "after the restart" })).status,
			).toBe(202);
			await waitFor(`e.type === "agent_end" && e.id > ${firstEnd.id}`);
			const all = await seen();
			expect(all.filter((e) => e.type === "agent_end").map((e) => e.text)).toEqual([words, "after the restart"]);
			// Resumed with Last-Event-ID: one snapshot (the first connection's), every id once, in order.
			expect(all.filter((e) => e.type === "session_snapshot")).toHaveLength(1);
			const ids = all.map((e) => e.id);
			expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
			expect(await page.evaluate(() => (globalThis as any).source.readyState)).toBe(1);
			second.child.kill("SIGTERM");
			expect(await second.exited).toEqual({ code: 0, signal: null });
		},
	);
});
