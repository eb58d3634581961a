/**
 * Aborting AG-UI runs: `abortRun()` closes the connection, and the server aborts the run; a run
 * aborted from elsewhere (`POST /v1/sessions/:id/abort`) ends the AG-UI run as `cancelled`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { aguiAgent, checkFraming, quietConsole, runOnce, typesOf } from "../../helpers/agui.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-test-key";
let server: TestServer;
let console_: ReturnType<typeof quietConsole>;

beforeEach(() => {
	console_ = quietConsole();
});
afterEach(async () => {
	try {
		console_.check();
	} finally {
		console_.restore();
		await server?.close();
	}
});

const LONG = Array.from({ length: 300 }, (_, i) => `w${i}`).join(" ");

async function waitUntilIdle(sessionId: string): Promise<Record<string, any>> {
	for (;;) {
		const state = await server.request("GET", `/v1/sessions/${sessionId}`, { key: KEY });
		if (state.body.status === "idle") return state.body;
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
}

function sessionOf(events: { type: string }[]): string {
	return (events[0] as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata.wheelhouse.sessionId;
}

describe("aborting AG-UI runs", () => {
	it("abortRun() closes the stream and the server aborts the run", async () => {
		server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 20 } });
		const { agent } = aguiAgent(server, KEY);
		agent.addMessage({ id: "u1", role: "user", content: LONG });
		const { events } = await runOnce(
			agent,
			{},
			{
				onTextMessageContentEvent: () => {
					agent.abortRun();
				},
			},
		);
		// The client reports its own abort; the server sent no end of its own.
		expect(typesOf(events).at(-1)).toBe("RUN_ERROR");
		expect(events.at(-1)).toMatchObject({ code: "abort" });
		expect(typesOf(events)).not.toContain("RUN_FINISHED");

		const state = await waitUntilIdle(sessionOf(events));
		expect(state.status).toBe("idle");
		const transcript = await server.request("GET", `/v1/sessions/${sessionOf(events)}/messages`, { key: KEY });
		const answer = transcript.body.messages.at(-1);
		expect(answer).toMatchObject({ role: "assistant", stopReason: "aborted" });
		const text = answer.content.map((block: { text?: string }) => block.text ?? "").join("");
		expect(text.length).toBeLessThan(LONG.length);
	});

	it("a run aborted from elsewhere ends as RUN_FINISHED with the cancelled outcome, nothing left open", async () => {
		server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 20 } });
		const client = aguiAgent(server, KEY);
		const { agent } = client;
		agent.addMessage({ id: "u1", role: "user", content: LONG });
		let aborted: Promise<unknown> | undefined;
		const outcomes: string[] = [];
		const { events } = await runOnce(
			agent,
			{},
			{
				onRunStartedEvent: ({ event }) => {
					const sessionId = (event as unknown as { metadata: { wheelhouse: { sessionId: string } } }).metadata
						.wheelhouse.sessionId;
					aborted = server.request("POST", `/v1/sessions/${sessionId}/abort`, { key: KEY });
				},
				onRunFinishedEvent: (params) => void outcomes.push(params.outcome),
			},
		);
		expect(await aborted).toMatchObject({ status: 200 });
		expect(outcomes).toEqual(["cancelled"]);
		const types = typesOf(events);
		expect(types.at(-1)).toBe("RUN_FINISHED");
		expect(types.filter((t) => t.endsWith("_START")).length).toBe(types.filter((t) => t.endsWith("_END")).length);
		expect(typesOf(checkFraming(await (client.bodies[0] as Promise<string>)))).toEqual(types);
	});
});
