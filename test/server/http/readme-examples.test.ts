/**
 * The shell examples for client-side tools, approvals (docs/tools.md, its examples that run as pasted) and
 * compaction (docs/long-sessions.md) work when pasted: each block runs as written (bash, curl, node)
 * against a real server, and the run ends the way the block's closing comment says. `localhost:3000` becomes the test server's address; nothing else in a block
 * is changed. The stand-in model streams slower than its default here, as a real model that takes a
 * moment before it calls a tool: a block that does not wait for the call fails every time, not by chance.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

const run = promisify(execFile);
const docs = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../../docs");
const tools = readFileSync(path.join(docs, "tools.md"), "utf8");
// The reference part of tools.md illustrates with jq and `$S`; the blocks pasted here are those of its last section.
const readme = [
	tools.slice(tools.indexOf("## Examples that run as pasted")),
	readFileSync(path.join(docs, "long-sessions.md"), "utf8"),
].join("\n");
const shellBlocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);

/** The one block that uses `marker`. */
function blockWith(marker: string): string {
	const found = shellBlocks.filter((block) => block.includes(marker));
	expect(found, `one sh block uses ${marker}`).toHaveLength(1);
	return found[0]!;
}

let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

/** Runs `block` as pasted into bash; returns the session id it created (its `ID`). */
async function paste(block: string): Promise<string> {
	server = await startServer({ config: { fauxDelayMs: 100 } });
	const host = new URL(server.url).host;
	const script = `set -e\n${block.replaceAll("localhost:3000", host)}\necho "SESSION=$ID"\n`;
	const { stdout } = await run("bash", ["-c", script], { timeout: 50_000, env: { PATH: process.env.PATH } });
	const id = /SESSION=(\S+)/.exec(stdout)?.[1];
	expect(id, stdout).toBeTruthy();
	return id!;
}

/** The session's events from the start until its run ends. */
async function runEvents(id: string) {
	const events = await openSse(`${server!.url}/v1/sessions/${id}/events`, { headers: { "last-event-id": "0" } });
	await events.waitForType("agent_end", 10_000);
	events.close();
	return events.events;
}

// Each block starts several processes (bash, curl, node): slow on a loaded machine.
describe("docs shell examples", { timeout: 60_000 }, () => {
	it("client-side tool: the pasted block answers the call and the model sees the result", async () => {
		const id = await paste(blockWith("pendingClientToolCalls"));
		const ends = (await runEvents(id)).filter((e) => e.event === "tool_execution_end");
		expect(ends).toHaveLength(1);
		expect(ends[0]!.data).toMatchObject({ toolName: "pick_color", isError: false });
		const messages = (await server!.request("GET", `/v1/sessions/${id}/messages`)).body.messages;
		const answer = JSON.stringify(messages.at(-1));
		expect(answer).toContain("Tool results: pick_color: teal");
	});

	it("compaction: the pasted block sets the settings, and compacts all but the latest turn", async () => {
		const id = await paste(blockWith("/compact"));
		const state = (await server!.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.compaction).toMatchObject({
			reserveTokens: 8192,
			keepRecentTokens: 10000,
			last: { reason: "manual" },
		});
		expect(state.budget).toMatchObject({ maxCostUsd: 2, maxTurnsPerRun: 25 });
		const messages = (await server!.request("GET", `/v1/sessions/${id}/messages`)).body.messages;
		expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "compaction"]);
		expect(messages[2]).toMatchObject({ firstKeptIndex: 1, instructions: "Keep every number." });
	});

	it("approval: the pasted block denies the call and the model sees the reason", async () => {
		const id = await paste(blockWith("pendingApprovals"));
		const ends = (await runEvents(id)).filter((e) => e.event === "tool_execution_end");
		expect(ends).toHaveLength(1);
		expect(ends[0]!.data.isError).toBe(true);
		expect(JSON.stringify(ends[0]!.data.result)).toContain("The user denied the call to calculate: not now");
	});
});
