/**
 * The typed client's rewind, regenerate, edit and branch-list methods against a real server: each
 * sends what the route takes, and its answer reads as typed; a refusal arrives as a
 * `WheelhouseHttpError` with its code.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { WheelhouseClient, WheelhouseHttpError } from "../../src/client/index.js";
import { waitUntil } from "../helpers/cluster.js";
import { startServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let client: WheelhouseClient;
beforeAll(async () => {
	server = await startServer();
	client = new WheelhouseClient({ baseUrl: server.url });
});
afterAll(() => server.close());

const idle = (id: string) =>
	waitUntil("the session idle", async () => {
		const s = await client.getSession(id);
		return s.status === "idle" && !s.isStreaming ? true : undefined;
	});
const texts = async (id: string) => (await client.messages(id)).messages.map((m: any) => m.content[0].text as string);

it("rewinds, regenerates, edits and lists the superseded branches", async () => {
	const session = await client.createSession({ model: "faux/echo" });
	for (const m of ["one", "two"]) {
		await client.prompt(session.id, m);
		await idle(session.id);
	}
	const rewound = await client.rewindSession(session.id, "wh-1");
	expect(rewound).toMatchObject({ messageCount: 2, branch: { branch: 1, fromMessageId: "wh-2", messageCount: 2 } });
	const regen = await client.regenerate(session.id);
	expect(regen).toMatchObject({ status: "started", runId: expect.any(String) });
	await idle(session.id);
	const edit = await client.editMessage(session.id, "wh-0", { content: "ONE" });
	expect(edit.status).toBe("started");
	await idle(session.id);
	expect(await texts(session.id)).toEqual(["ONE", "ONE"]);
	expect((await client.listBranches(session.id)).map((b) => [b.branch, b.fromMessageId])).toEqual([
		[1, "wh-2"],
		[2, "wh-1"],
		[3, "wh-0"],
	]);
	const missing = await client.rewindSession(session.id, "wh-9").catch((err: unknown) => err);
	expect(missing).toBeInstanceOf(WheelhouseHttpError);
	expect((missing as WheelhouseHttpError).code).toBe("MESSAGE_NOT_FOUND");
});

it("repeats a branching call whose answer was lost with its key: one fork, one regenerate, one edit", async () => {
	/** The real fetch, except that the first answer to a request matching `lose` never arrives. */
	let lose: RegExp | undefined;
	let lost = false;
	const keys: (string | null)[] = [];
	const lossy: typeof fetch = async (input, init) => {
		const matches = lose?.test(String(input)) === true;
		if (matches) keys.push(new Headers(init?.headers).get("idempotency-key"));
		const response = await fetch(input, init);
		if (matches && !lost) {
			lost = true;
			await response.body?.cancel();
			throw new TypeError("fetch failed");
		}
		return response;
	};
	const next = (pattern: RegExp) => {
		lose = pattern;
		lost = false;
		keys.length = 0;
	};
	const retrying = new WheelhouseClient({ baseUrl: server.url, fetch: lossy, retryDelayMs: 10 });
	const session = await client.createSession({ model: "faux/echo" });
	for (const m of ["one", "two"]) {
		await client.prompt(session.id, m);
		await idle(session.id);
	}

	next(/\/fork$/);
	const fork = await retrying.forkSession(session.id, { atMessageId: "wh-1" });
	expect(keys).toHaveLength(2);
	expect(keys[0]).toBe(keys[1]);
	const forks = await client.listSessions({ metadata: { "wheelhouse.forkedFrom": session.id } });
	expect(forks.sessions.map((s) => s.id)).toEqual([fork.id]);

	next(/\/regenerate$/);
	const regen = await retrying.regenerate(session.id, { idempotencyKey: "regen-once" });
	expect(keys).toEqual(["regen-once", "regen-once"]);
	expect(regen.status).toBe("started");
	await idle(session.id);

	next(/\/messages\/wh-2$/);
	await retrying.editMessage(session.id, "wh-2", { content: "TWO" });
	expect(keys).toHaveLength(2);
	await idle(session.id);
	expect(await texts(session.id)).toEqual(["one", "one", "TWO", "TWO"]);
	// One branch per call: the regenerate's and the edit's, no second of either.
	expect(await client.listBranches(session.id)).toHaveLength(2);
});
