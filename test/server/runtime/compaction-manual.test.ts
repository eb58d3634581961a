/**
 * `POST /v1/sessions/:id/compact`: compacts an idle session now, with the client's instructions in
 * the summary request, and answers with the compaction; the next prompt sends the summary and the
 * kept messages. Refused while a run is active, when there is nothing older to summarise, and
 * when the summary call fails (the session is then unchanged and usable).
 */
import { afterEach, describe, expect, it } from "vitest";
import { promptAndWait, scriptedModel, text400, textOf, transcript, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

const model = scriptedModel("compaction-manual-faux");
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
	model.requests.length = 0;
});

async function session(body: Record<string, unknown> = {}) {
	server = await startServer({ models: [model.faux.getModel()] });
	const created = await server.request("POST", "/v1/sessions", { body: { model: model.spec, ...body } });
	return { s: server, id: created.body.id as string };
}

describe("manual compaction", () => {
	it("summarises with the client's instructions and answers with the compaction; the next prompt sends the summary", async () => {
		const { s, id } = await session();
		model.script(
			{ content: text400("A1"), usage: usage(300) },
			{ content: text400("A2"), usage: usage(500) },
			{ content: "MANUAL SUMMARY", usage: usage(120, 0.01) },
			{ content: "after", usage: usage(400) },
		);
		await promptAndWait(s, id, text400("U1"));
		await promptAndWait(s, id, text400("U2"));
		const events = await openSse(`${s.url}/v1/sessions/${id}/events`);

		// The default keeps 20,000 tokens: all of this; keepRecentTokens 100 keeps the last answer (100 tokens).
		const nothing = await s.request("POST", `/v1/sessions/${id}/compact`, {});
		expect(nothing.status).toBe(409);
		expect(nothing.body.error.code).toBe("NOTHING_TO_COMPACT");

		const res = await s.request("POST", `/v1/sessions/${id}/compact`, {
			body: { instructions: "Keep every number.", keepRecentTokens: 100 },
		});
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({
			compacted: true,
			messageIndex: 4,
			tokensBefore: 500,
			message: {
				role: "compaction",
				summary: "MANUAL SUMMARY",
				firstKeptIndex: 3,
				reason: "manual",
				instructions: "Keep every number.",
				usage: usage(120, 0.01),
			},
		});
		expect(res.body.tokensAfter).toBe(res.body.message.tokensAfter);
		const asked = textOf(model.requests[2]!.messages[0]);
		expect(asked).toContain(
			`[User]: ${text400("U1")}\n[Assistant]: ${text400("A1")}\n[User]: ${text400("U2")}\n</conversation>`,
		);
		expect(asked.endsWith("Also: Keep every number.")).toBe(true);

		const start = await events.waitForType("compaction_start");
		expect(start.data).toEqual({
			type: "compaction_start",
			reason: "manual",
			tokensBefore: 500,
			messagesToSummarize: 3,
			messagesKept: 1,
			instructions: "Keep every number.",
		});
		await events.waitForType("compaction_end");

		// A run of its own: the summary's usage counts, and the session is idle again.
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.usage.totalTokens).toBe(300 + 500 + 120);
		expect(state.compaction.last).toMatchObject({ reason: "manual", firstKeptIndex: 3 });

		await promptAndWait(s, id, "go on");
		const stored = await transcript(s, id);
		expect(stored.map((m) => m.role)).toEqual([
			"user",
			"assistant",
			"user",
			"assistant",
			"compaction",
			"user",
			"assistant",
		]);
		expect(model.requests[3]!.messages).toEqual([
			{
				role: "user",
				content: [{ type: "text", text: expect.stringContaining("MANUAL SUMMARY") }],
				timestamp: expect.any(Number),
			},
			stored[3],
			stored[5],
		]);
		events.close();
	});

	it("is refused while a run is active (409 AGENT_BUSY), and a run cannot start during one", async () => {
		const { s, id } = await session();
		let release!: () => void;
		const held = new Promise<void>((resolve) => {
			release = resolve;
		});
		model.script({ content: text400("A1"), usage: usage(300) }, async () => {
			await held;
			return { content: "slow", usage: usage(400) };
		});
		await promptAndWait(s, id, text400("U1"));
		await s.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "second" } });
		const busy = await s.request("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 0 } });
		expect(busy.status).toBe(409);
		expect(busy.body.error.code).toBe("AGENT_BUSY");
		release();
		await s.app.wheelhouse.sessions.get(id, null).waitForIdle();

		// While the summary is being written, a prompt is refused as for a running session.
		let finish!: () => void;
		const writing = new Promise<void>((resolve) => {
			finish = resolve;
		});
		model.script(async () => {
			await writing;
			return { content: "S", usage: usage(50) };
		});
		const compacting = s.request("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 0 } });
		await waitFor(() => model.requests.length === 3);
		const during = await s.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "now?" } });
		expect(during.status).toBe(409);
		expect(during.body.error.code).toBe("AGENT_BUSY");
		expect((await s.request("GET", `/v1/sessions/${id}`)).body.compaction.status).toBe("compacting");
		finish();
		expect((await compacting).status).toBe(200);
	});

	it("fails with 502 COMPACTION_FAILED when the summary call fails; the session is unchanged and usable", async () => {
		const { s, id } = await session();
		model.script(
			{ content: text400("A1"), usage: usage(300) },
			{ content: [], stopReason: "error", errorMessage: "HTTP 503: upstream overloaded" },
			{ content: "works", usage: usage(400) },
		);
		await promptAndWait(s, id, text400("U1"));
		const events = await openSse(`${s.url}/v1/sessions/${id}/events`);
		const res = await s.request("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 0 } });
		expect(res.status).toBe(502);
		expect(res.body.error).toEqual({
			code: "COMPACTION_FAILED",
			message: "The summary call failed: HTTP 503: upstream overloaded. The session is unchanged.",
		});
		const end = await events.waitForType("compaction_end");
		expect(end.data).toMatchObject({
			reason: "manual",
			outcome: "failed",
			errorMessage: "HTTP 503: upstream overloaded",
		});
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.compaction.lastError).toMatchObject({ reason: "manual", message: "HTTP 503: upstream overloaded" });
		expect((await transcript(s, id)).map((m) => m.role)).toEqual(["user", "assistant"]);
		await promptAndWait(s, id, "still there?");
		expect(model.requests[2]!.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
		events.close();
	});

	it("makes a continue from the assistant's answer invalid, as the answer itself does", async () => {
		const { s, id } = await session();
		model.script({ content: text400("A1"), usage: usage(300) }, { content: "S", usage: usage(50) });
		await promptAndWait(s, id, text400("U1"));
		expect((await s.request("POST", `/v1/sessions/${id}/compact`, { body: { keepRecentTokens: 0 } })).status).toBe(200);
		const res = await s.request("POST", `/v1/sessions/${id}/continue`);
		expect(res.status).toBe(422);
		expect(res.body.error.code).toBe("CANNOT_CONTINUE_FROM_ASSISTANT");
	});
});

async function waitFor(condition: () => boolean): Promise<void> {
	while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}
