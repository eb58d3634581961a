/**
 * A session that grows past its model's context window compacts before the model call that would
 * not fit: the model is asked for a summary of the older messages, and the call then sends exactly
 * the summary and the recent messages (a tool call with its result, never one without the other).
 * The next compaction folds the previous summary into its own; the transcript keeps everything.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fauxToolCall } from "../../../src/ai/providers/faux.js";
import { SUMMARY_SYSTEM_PROMPT } from "../../../src/server/runtime/compaction/summarize.js";
import { SUMMARY_PREFIX, SUMMARY_SUFFIX } from "../../../src/server/runtime/compaction/view.js";
import { promptAndWait, scriptedModel, text400, textOf, transcript, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

const model = scriptedModel("compaction-threshold-faux");
let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
	model.requests.length = 0;
});

const summaryText = (summary: string) => `${SUMMARY_PREFIX}${summary}${SUMMARY_SUFFIX}`;

describe("compaction at the threshold", () => {
	it("summarises the older messages, then sends the summary and the recent messages, tool call and result together", async () => {
		server = await startServer({ models: [model.faux.getModel()] });
		// Window 4,000 − reserve 1,000: compact above 3,000 tokens; keep about 205 tokens of recent messages.
		const created = await server.request("POST", "/v1/sessions", {
			body: { model: model.spec, compaction: { reserveTokens: 1000, keepRecentTokens: 205 } },
		});
		expect(created.status).toBe(201);
		expect(created.body.compaction).toMatchObject({
			enabled: true,
			reserveTokens: 1000,
			keepRecentTokens: 205,
			contextWindow: 4000,
			thresholdTokens: 3000,
			last: null,
		});
		const id = created.body.id as string;
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);

		model.script(
			{ content: text400("A1"), usage: usage(1000) },
			{ content: fauxToolCall("calculate", { expression: "6*7" }, { id: "call_1" }), usage: usage(1200) },
			{ content: text400("A2"), usage: usage(2950) },
			{ content: "## Goal\nSUMMARY-1", usage: usage(600, 0.25) },
			{ content: text400("A3"), usage: usage(3100) },
			{ content: "## Goal\nSUMMARY-2", usage: usage(700, 0.5) },
			{ content: text400("A4"), usage: usage(900) },
		);
		await promptAndWait(server, id, text400("U1"));
		await promptAndWait(server, id, text400("U2"));
		const before = await transcript(server, id);
		expect(before.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "toolResult", "assistant"]);
		expect(model.requests).toHaveLength(3);

		// The last answer reported 2,950 tokens; the new prompt adds 100: 3,050 > 3,000.
		await promptAndWait(server, id, text400("U3"));
		expect(model.requests).toHaveLength(5);
		const [summaryRequest, afterCompaction] = model.requests.slice(3);
		expect(summaryRequest!.systemPrompt).toBe(SUMMARY_SYSTEM_PROMPT);
		expect(summaryRequest!.messages).toHaveLength(1);
		const asked = textOf(summaryRequest!.messages[0]);
		expect(asked).toContain(
			`<conversation>\n[User]: ${text400("U1")}\n[Assistant]: ${text400("A1")}\n[User]: ${text400("U2")}\n</conversation>`,
		);
		expect(asked).toContain(
			"## Goal, ## Constraints, ## Decisions, ## State of the work, ## Open questions, ## Next steps",
		);
		expect(asked).not.toContain("previous-summary");

		// Kept: the tool call, its result, the answer after it and the new prompt; before them, the summary.
		expect(afterCompaction!.messages).toEqual([
			{
				role: "user",
				content: [{ type: "text", text: summaryText("## Goal\nSUMMARY-1") }],
				timestamp: expect.any(Number),
			},
			before[3],
			before[4],
			before[5],
			{ role: "user", content: [{ type: "text", text: text400("U3") }], timestamp: expect.any(Number) },
		]);
		const call = afterCompaction!.messages[1] as any;
		const result = afterCompaction!.messages[2] as any;
		expect(call.content[0]).toMatchObject({ type: "toolCall", id: "call_1", name: "calculate" });
		expect(result).toMatchObject({ role: "toolResult", toolCallId: "call_1", content: [{ type: "text", text: "42" }] });

		// The transcript keeps every message; the compaction message sits where it happened.
		const after = await transcript(server, id);
		expect(after.map((m) => m.role)).toEqual([
			"user",
			"assistant",
			"user",
			"assistant",
			"toolResult",
			"assistant",
			"user",
			"compaction",
			"assistant",
		]);
		expect(after.slice(0, 7)).toEqual([...before, after[6]]);
		const compaction = after[7];
		expect(compaction).toMatchObject({
			role: "compaction",
			summary: "## Goal\nSUMMARY-1",
			firstKeptIndex: 3,
			reason: "threshold",
			tokensBefore: 3050,
			model: model.spec,
			usage: usage(600, 0.25),
		});
		// Summary (about 5 tokens) + the kept messages' estimates (8 + 1 + 100 + 100).
		expect(compaction.tokensAfter).toBe(214);

		// On the stream: compaction_start then compaction_end, between the prompt and the answer.
		const end = await events.waitForType("compaction_end");
		const start = events.events.find((e) => e.event === "compaction_start")!;
		expect(start.data).toEqual({
			type: "compaction_start",
			reason: "threshold",
			tokensBefore: 3050,
			messagesToSummarize: 3,
			messagesKept: 4,
		});
		expect(end.data).toEqual({
			type: "compaction_end",
			reason: "threshold",
			outcome: "compacted",
			tokensBefore: 3050,
			tokensAfter: 214,
			message: compaction,
			messageIndex: 7,
		});
		// The answer's first event may still be on its way when compaction_end arrives.
		await events.waitFor((e) => e.event === "message_start" && (e.id as number) > (end.id as number));
		const order = events.events.map((e) => e.event);
		const at = (name: string, from = 0) => order.indexOf(name, from);
		expect(at("compaction_start")).toBeLessThan(at("compaction_end"));
		expect(at("compaction_end")).toBeLessThan(at("message_start", at("compaction_end")));

		// The state shows the compaction; the summary call's usage is in the session's totals.
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.compaction.last).toEqual({
			at: compaction.timestamp,
			reason: "threshold",
			tokensBefore: 3050,
			tokensAfter: 214,
			firstKeptIndex: 3,
		});
		expect(state.compaction.lastError).toBeNull();
		expect(state.usage.totalTokens).toBe(1000 + 1200 + 2950 + 600 + 3100);
		expect(state.usage.cost.total).toBeCloseTo(0.25);
		// The last answer measured the compacted context: the state's figure is its report.
		expect(state.compaction.contextTokens).toBe(3100);

		// The next run: the view holds; the answer reported 3,100 + 100 for the prompt passes the
		// threshold again, and the new summary folds in the previous one.
		await promptAndWait(server, id, text400("U4"));
		expect(model.requests).toHaveLength(7);
		const [secondSummary, afterSecond] = model.requests.slice(5);
		const askedAgain = textOf(secondSummary!.messages[0]);
		expect(askedAgain).toContain("<previous-summary>\n## Goal\nSUMMARY-1\n</previous-summary>");
		expect(askedAgain).toContain(
			`<conversation>\n[Assistant tool call calculate]: {"expression":"6*7"}\n[Tool result calculate]: 42\n[Assistant]: ${text400("A2")}\n</conversation>`,
		);
		const final = await transcript(server, id);
		expect(final.map((m) => m.role).slice(9)).toEqual(["user", "compaction", "assistant"]);
		expect(final[10]).toMatchObject({ summary: "## Goal\nSUMMARY-2", firstKeptIndex: 6, reason: "threshold" });
		// Only the newest summary reaches the model, then what it keeps (the older compaction message is left out).
		expect(afterSecond!.messages).toEqual([
			{
				role: "user",
				content: [{ type: "text", text: summaryText("## Goal\nSUMMARY-2") }],
				timestamp: expect.any(Number),
			},
			final[6],
			final[8],
			final[9],
		]);
		events.close();
	});

	it("does not compact a session whose compaction is off", async () => {
		server = await startServer({ models: [model.faux.getModel()] });
		const id = (
			await server.request("POST", "/v1/sessions", {
				body: { model: model.spec, compaction: { enabled: false, reserveTokens: 1000, keepRecentTokens: 205 } },
			})
		).body.id;
		model.script({ content: text400("A1"), usage: usage(3500) }, { content: "fine", usage: usage(3700) });
		await promptAndWait(server, id, text400("U1"));
		await promptAndWait(server, id, text400("U2"));
		expect(model.requests).toHaveLength(2);
		expect(model.requests[1]!.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.compaction).toMatchObject({ enabled: false, contextTokens: 3700, last: null });
	});
});
