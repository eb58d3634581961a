// `npm start` builds dist/ when it is stale, then starts the server: a minute or more on a busy machine.
/**
 * docs/operations.md's tracing lines run as pasted: `npm start` with the `OTEL_*` variables they set
 * exports spans to the collector they name, here a local receiver (a node:http server standing in
 * for one; `http://otel-collector:4318` becomes its address, the port and SQLite file come from the
 * environment, which the lines do not set). With the one-in-ten sampler, some requests' traces are
 * exported and most are not.
 */
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../helpers/cluster.js";
import { docBlock } from "../../helpers/doc-blocks.js";
import { freePort } from "../../helpers/main-process.js";
import { killPastedShells, pastedServerReady, startPastedShell } from "../../helpers/pasted-shell.js";

const COLLECTOR = "http://otel-collector:4318";
let dir: string;
let collector: Server | undefined;

beforeAll(() => {
	dir = mkdtempSync(path.join(tmpdir(), "wh-docs-npm-start-"));
});
afterEach(async () => {
	killPastedShells();
	collector?.close();
	collector = undefined;
});
afterAll(() => {
	rmSync(dir, { recursive: true, force: true });
});

/** A collector stand-in: the bodies POSTed to /v1/traces, answered 200. */
async function startCollector(): Promise<{ url: string; bodies: Buffer[] }> {
	const bodies: Buffer[] = [];
	collector = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => {
			if (req.method === "POST" && req.url === "/v1/traces") bodies.push(Buffer.concat(chunks));
			res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
		});
	}).listen(0, "127.0.0.1");
	await once(collector, "listening");
	return { url: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`, bodies };
}

/** How often `text` occurs in the exported bodies (protobuf keeps strings as they are). */
function occurrences(bodies: Buffer[], text: string): number {
	let count = 0;
	for (const body of bodies) for (let i = body.indexOf(text); i !== -1; i = body.indexOf(text, i + 1)) count++;
	return count;
}

/** Starts `block` with the collector's address for the one it names; the server's base URL. */
async function start(block: string, collectorUrl: string) {
	expect(block).toContain(COLLECTOR);
	const port = await freePort();
	const shell = startPastedShell(block.replace(COLLECTOR, collectorUrl), {
		PORT: String(port),
		WHEELHOUSE_DB: path.join(dir, `${port}.db`),
		WHEELHOUSE_SHUTDOWN_GRACE_MS: "500",
	});
	const base = `http://127.0.0.1:${port}`;
	await pastedServerReady(base, shell);
	return { base, shell };
}

describe("docs/operations.md: traces with npm start", { timeout: 300_000 }, () => {
	it("exports the spans of a run to the collector, under the service name", async () => {
		const { url, bodies } = await startCollector();
		const { base, shell } = await start(docBlock("docs/operations.md", "sh", "OTEL_SERVICE_NAME").code, url);
		const created = await fetch(`${base}/v1/sessions`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: "{}",
		});
		const { id } = (await created.json()) as { id: string };
		await fetch(`${base}/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({ message: "hello" }),
		}).then((res) => res.text());
		await waitUntil(
			"the run's spans at the collector",
			async () => (occurrences(bodies, "invoke_agent") > 0 ? true : undefined),
			30_000,
		);
		expect(occurrences(bodies, "wheelhouse")).toBeGreaterThan(0);
		expect(shell.output(), shell.output()).toMatch(
			/tracing on: spans of service \\?"wheelhouse\\?" exported to http:\/\/127\.0\.0\.1:\d+\/v1\/traces/,
		);
	});

	it("with the one-in-ten sampler exports some traces, not all", async () => {
		const { url, bodies } = await startCollector();
		const { base, shell } = await start(docBlock("docs/operations.md", "sh", "OTEL_TRACES_SAMPLER_ARG=0.1").code, url);
		const requests = 100;
		for (let i = 0; i < requests; i++) expect((await fetch(`${base}/v1/sessions`)).status).toBe(200);
		// The last spans are flushed when the server stops.
		await shell.stop("SIGTERM");
		const exported = occurrences(bodies, "GET /v1/sessions");
		// At ratio 0.1, none of 100 is a chance of 3 in 100,000.
		expect(exported).toBeGreaterThan(0);
		expect(exported).toBeLessThan(requests / 2);
	});
});
