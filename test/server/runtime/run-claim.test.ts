import { afterEach, describe, expect, it } from "vitest";
import { createMemoryStore } from "../../../src/store/memory.js";
import type { SessionStore } from "../../../src/store/types.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

/** The real store, whose next `startRun` throws once (a failure between claiming the session and the run). */
function storeFailingNextStartRun(): { store: SessionStore; failNext(): void } {
	const real = createMemoryStore();
	let fail = false;
	const store = new Proxy(real, {
		get(target, prop, receiver) {
			if (prop === "startRun") {
				return (...args: Parameters<SessionStore["startRun"]>) => {
					if (fail) {
						fail = false;
						throw new Error("injected: startRun failed");
					}
					return target.startRun(...args);
				};
			}
			const value = Reflect.get(target, prop, receiver);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
	return {
		store,
		failNext: () => {
			fail = true;
		},
	};
}

describe("a run that fails to start releases the session", () => {
	for (const kind of ["prompt", "prompt over SSE", "continue"] as const) {
		it(`${kind}: the session is idle again, takes the next prompt, aborts and deletes promptly`, async () => {
			const faulty = storeFailingNextStartRun();
			server = await startServer({ store: faulty.store });
			const id = (
				await server.request("POST", "/v1/sessions", {
					body: { messages: [{ role: "user", content: "x", timestamp: 1 }] },
				})
			).body.id;

			faulty.failNext();
			if (kind === "prompt over SSE") {
				const res = await fetch(`${server.url}/v1/sessions/${id}/prompt`, {
					method: "POST",
					headers: { "content-type": "application/json", accept: "text/event-stream" },
					body: JSON.stringify({ message: "hi" }),
				});
				expect(res.status).toBe(500);
				expect(((await res.json()) as { error: { code: string } }).error.code).toBe("INTERNAL_ERROR");
			} else {
				const path = kind === "continue" ? "continue" : "prompt";
				const res = await server.request(
					"POST",
					`/v1/sessions/${id}/${path}`,
					kind === "continue" ? {} : { body: { message: "hi" } },
				);
				expect(res.status).toBe(500);
				expect(res.body.error.code).toBe("INTERNAL_ERROR");
			}

			const view = (await server.request("GET", `/v1/sessions/${id}`)).body;
			expect(view).toMatchObject({ status: "idle", runId: null, isStreaming: false });
			expect((await server.request("POST", `/v1/sessions/${id}/abort`)).body).toEqual({ aborted: false, runId: null });

			const next = await promptSse(server.url, id, { message: "again" });
			await next.waitForEnd();
			expect(next.events.at(-1)!.event).toBe("agent_end");

			const interrupt = await server.request("POST", `/v1/sessions/${id}/prompt`, {
				body: { message: "third", ifBusy: "interrupt" },
			});
			expect(interrupt.status).toBe(202);
			const deleted = await server.request("DELETE", `/v1/sessions/${id}`);
			expect(deleted.status).toBe(200);
			expect((await server.request("GET", `/v1/sessions/${id}`)).status).toBe(404);
		});
	}
});
