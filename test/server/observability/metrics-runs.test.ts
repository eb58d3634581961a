/**
 * `wheelhouse_runs_total{outcome}`: runs driven to each end — completed, failed (the provider
 * refuses the call), aborted (by the client), interrupted (the process killed mid-run, counted by
 * the process that announces it after the restart) — as a scrape of `/metrics` shows them.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { json, repoRoot, startMain, stopAll } from "../../helpers/main-process.js";
import { startReplayServer } from "../../helpers/replay-server.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

const servers: TestServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
	for (const server of servers.splice(0)) await server.close();
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The `wheelhouse_runs_total` samples of a scrape, by outcome. */
function runsByOutcome(text: string): Record<string, number> {
	const runs: Record<string, number> = {};
	for (const match of text.matchAll(/^wheelhouse_runs_total\{outcome="(\w+)"\} (\d+)$/gm)) {
		runs[match[1]!] = Number(match[2]);
	}
	return runs;
}

describe("wheelhouse_runs_total", () => {
	it("counts completed, failed and aborted runs by outcome", async () => {
		const provider = await startReplayServer();
		try {
			const server = await startServer({
				env: { BROKEN_API_KEY: "k-test" },
				config: {
					fauxDelayMs: 5,
					models: [{ provider: "broken", id: "m", baseUrl: `${provider.url}/v1`, apiKeyEnv: "BROKEN_API_KEY" }],
				},
			});
			servers.push(server);
			const before = runsByOutcome(await (await fetch(`${server.url}/metrics`)).text());
			expect(before).toEqual({ completed: 0, failed: 0, aborted: 0, interrupted: 0 });

			const id = (await server.request("POST", "/v1/sessions", { body: { model: "faux/echo" } })).body.id;
			await (await promptSse(server.url, id, { message: "hello" })).waitForEnd();
			await (await promptSse(server.url, id, { message: "hello again" })).waitForEnd();

			const words = Array.from({ length: 500 }, (_, i) => `w${i}`).join(" ");
			const long = await promptSse(server.url, id, { message: words });
			await long.waitFor((e) => e.event === "message_update");
			expect((await server.request("POST", `/v1/sessions/${id}/abort`)).body.aborted).toBe(true);
			await long.waitForEnd();

			provider.enqueue({ status: 400, body: JSON.stringify({ error: { message: "bad request" } }) });
			const broken = (await server.request("POST", "/v1/sessions", { body: { model: "broken/m" } })).body.id;
			await (await promptSse(server.url, broken, { message: "hello" })).waitForEnd();

			const after = runsByOutcome(await (await fetch(`${server.url}/metrics`)).text());
			expect(after).toEqual({ completed: 2, failed: 1, aborted: 1, interrupted: 0 });
		} finally {
			await provider.close();
			await closeHttpPools();
		}
	});

	it("counts a run cut by a killed process as interrupted, in the process that announces it", async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-runs-total-"));
		dirs.push(dir);
		const db = path.join(dir, "wheelhouse.db");
		const env = { WHEELHOUSE_TOOL_MODULES: path.join(repoRoot, "test/server/fixtures/block-tool.ts") };

		const first = await startMain({ db, env });
		const id = (await json(`${first.url}/v1/sessions`, "POST", { onInterrupt: "stop" })).body.id;
		const live = await openSse(`${first.url}/v1/sessions/${id}/events`);
		await live.waitForType("session_snapshot");
		expect((await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: "/tool block {}" })).status).toBe(
			202,
		);
		await live.waitForType("tool_execution_start");
		live.close();
		first.child.kill("SIGKILL");
		await once(first.child, "exit");

		const second = await startMain({ db, env });
		expect((await json(`${second.url}/v1/sessions/${id}`)).body.status).toBe("interrupted");
		const runs = runsByOutcome(await (await fetch(`${second.url}/metrics`)).text());
		expect(runs).toEqual({ completed: 0, failed: 0, aborted: 0, interrupted: 1 });
	}, 60_000);
});
