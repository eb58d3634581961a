/**
 * The server process's idle memory: a full collection is asked for once the process has been quiet
 * (the young generation is then given back), never while it is busy, and at most twice per quiet
 * period. The real function on this process's real event loop.
 */
import { getHeapSpaceStatistics } from "node:v8";
import { afterEach, expect, it, vi } from "vitest";
import { type IdleMemory, startIdleMemory } from "../../src/server/idle-memory.js";

let watcher: IdleMemory | undefined;
let busy: NodeJS.Timeout | undefined;
afterEach(() => {
	watcher?.stop();
	clearInterval(busy);
});

const youngGeneration = () => getHeapSpaceStatistics().find((s) => s.space_name === "new_space")!.space_size;

/** Objects that survive a few scavenges grow the young generation past its initial size. */
function growYoungGeneration(): void {
	for (let round = 0; round < 20 && youngGeneration() <= 4 * 1024 * 1024; round++) {
		const kept: object[] = [];
		for (let i = 0; i < 200_000; i++) kept.push({ i, text: `item ${i}` });
		kept.length = 0;
	}
}

it("asks for a full collection only once the event loop has been quiet, and at most twice per quiet period", async () => {
	growYoungGeneration();
	expect(youngGeneration()).toBeGreaterThan(2 * 1024 * 1024);
	const reclaims: number[] = [];
	// Busy: more than half of every 25 ms spent in JavaScript.
	busy = setInterval(() => {
		const until = performance.now() + 15;
		while (performance.now() < until);
	}, 25);
	watcher = startIdleMemory({ checkMs: 200, quietMs: 400, retryMs: 400, onReclaim: (before) => reclaims.push(before) });
	await new Promise((resolve) => setTimeout(resolve, 1500));
	expect(reclaims).toEqual([]);

	clearInterval(busy);
	await vi.waitFor(() => expect(reclaims.length).toBeGreaterThan(0), { timeout: 10_000, interval: 20 });
	expect(reclaims[0]).toBeGreaterThan(2 * 1024 * 1024);
	// Quiet much longer than both tries: no third collection. (Samples of 200 ms: the test runner's
	// own bits of work on a loaded machine stay under the quiet threshold and do not start a new period.)
	await new Promise((resolve) => setTimeout(resolve, 2000));
	expect(reclaims.length).toBeLessThanOrEqual(2);
});
