/**
 * A graceful restart as a standard `EventSource` (the `eventsource` package) lives it: the server
 * process gets SIGTERM while a run streams, a new process starts on the same port and SQLite
 * file, and the same EventSource instances reconnect by themselves (with `Last-Event-ID` when
 * they had one) and receive the next run's events. Real child processes (two starts: tens of
 * seconds on a busy machine).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { EventSource } from "eventsource";
import { afterEach, describe, expect, it } from "vitest";
import { json, startMain, stopAll } from "../../helpers/main-process.js";

const dirs: string[] = [];
const sources: EventSource[] = [];
afterEach(() => {
	for (const source of sources.splice(0)) source.close();
	stopAll();
	for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const TYPES = ["session_snapshot", "agent_start", "message_update", "message_end", "agent_end"];

interface Seen {
	type: string;
	id: number;
	data: any;
}

/** An EventSource on the session's stream that records every event and lets a test wait for one. */
function watch(url: string): { source: EventSource; seen: Seen[]; waitFor(p: (e: Seen) => boolean): Promise<Seen> } {
	const source = new EventSource(url);
	sources.push(source);
	const seen: Seen[] = [];
	const errors: string[] = [];
	const waiters = new Set<() => void>();
	source.addEventListener("error", (event) => {
		errors.push(`${(event as { code?: number }).code ?? ""} ${(event as { message?: string }).message ?? ""}`);
	});
	for (const type of TYPES) {
		source.addEventListener(type, (event) => {
			seen.push({ type, id: Number(event.lastEventId), data: JSON.parse(event.data) });
			for (const waiter of [...waiters]) waiter();
		});
	}
	return {
		source,
		seen,
		waitFor: (predicate) =>
			new Promise((resolve, reject) => {
				const timer = setTimeout(() => {
					waiters.delete(check);
					reject(
						new Error(
							`${url}: no such event; seen ${seen.map((e) => `${e.id}:${e.type}`).join(" ")}; readyState ${source.readyState}, errors: ${errors.join("; ")}`,
						),
					);
				}, 20_000);
				const check = () => {
					const found = seen.find(predicate);
					if (!found) return;
					clearTimeout(timer);
					waiters.delete(check);
					resolve(found);
				};
				waiters.add(check);
				check();
			}),
	};
}

describe("graceful restart with a standard EventSource", () => {
	it("streams end with their connection, reconnects are never refused with a status, and the next process serves them", {
		timeout: 120_000,
	}, async () => {
		const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-es-restart-"));
		dirs.push(dir);
		const db = path.join(dir, "wheelhouse.db");
		const env = { WHEELHOUSE_SSE_RETRY_MS: "100" };

		const first = await startMain({ db, env: { ...env, WHEELHOUSE_FAUX_DELAY_MS: "40" } });
		const id = (await json(`${first.url}/v1/sessions`, "POST", {})).body.id;
		const before = watch(`${first.url}/v1/sessions/${id}/events`);
		await before.waitFor((e) => e.type === "session_snapshot");
		const words = Array.from({ length: 15 }, (_, i) => `w${i}`).join(" ");
		expect((await json(`${first.url}/v1/sessions/${id}/prompt`, "POST", { message: words })).status).toBe(202);
		await before.waitFor((e) => e.type === "message_update");

		// SIGTERM while the run streams: it finishes within the grace period.
		first.child.kill("SIGTERM");
		await first.waitForOutput(/SIGTERM: shutting down/);
		// A client that connects while the old process drains.
		const during = watch(`${first.url}/v1/sessions/${id}/events`);
		const firstEnd = await before.waitFor((e) => e.type === "agent_end");
		expect(firstEnd.data.messages.at(-1).content[0].text).toBe(words);
		expect(await first.exited, first.output()).toEqual({ code: 0, signal: null });

		const second = await startMain({ db, port: first.port, env });
		// The one that connected during the drain never had an event: it starts with a snapshot.
		await during.waitFor((e) => e.type === "session_snapshot");
		expect(
			(await json(`${second.url}/v1/sessions/${id}/prompt`, "POST", { message: "after the restart" })).status,
		).toBe(202);
		const isNextEnd = (e: Seen) => e.type === "agent_end" && e.id > firstEnd.id;
		const [end, endDuring] = await Promise.all([before.waitFor(isNextEnd), during.waitFor(isNextEnd)]);
		expect(end.data.messages.at(-1).content[0].text).toBe("after the restart");
		expect(endDuring.id).toBe(end.id);
		for (const { source } of [before, during]) expect(source.readyState).toBe(EventSource.OPEN);

		// The first EventSource resumed with Last-Event-ID: one snapshot (its first connection), and
		// every id once, in order, across both processes.
		expect(before.seen.filter((e) => e.type === "session_snapshot")).toHaveLength(1);
		const ids = before.seen.map((e) => e.id);
		expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
		const nextStart = before.seen.find((e) => e.type === "agent_start" && e.id > firstEnd.id);
		expect(nextStart).toBeDefined();
		second.child.kill("SIGTERM");
		expect(await second.exited).toEqual({ code: 0, signal: null });
	});
});
