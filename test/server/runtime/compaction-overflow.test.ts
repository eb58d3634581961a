/**
 * A model call the provider refuses because the context is too long is compacted and sent once
 * more; the refusal never reaches the transcript. Recognised from the providers' real error
 * bodies, as each driver reports them; a second refusal, a rate limit, or a compaction that fails
 * let the error through, and the session stays usable.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { streamSimple } from "../../../src/ai/stream.js";
import type { Model } from "../../../src/ai/types.js";
import { isContextOverflow } from "../../../src/server/runtime/compaction/overflow.js";
import { SUMMARY_PREFIX, SUMMARY_SUFFIX } from "../../../src/server/runtime/compaction/view.js";
import { type ReplayServer, startReplayServer } from "../../helpers/replay-server.js";
import { promptAndWait, scriptedModel, text400, textOf, transcript, usage } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse } from "../../helpers/sse.js";

const model = scriptedModel("compaction-overflow-faux");
let server: TestServer | undefined;
let replay: ReplayServer;
beforeAll(async () => {
	replay = await startReplayServer();
});
afterEach(async () => {
	await server?.close();
	server = undefined;
	model.requests.length = 0;
	replay.reset();
});
afterAll(async () => {
	await replay.close();
	await closeHttpPools();
});

const ANTHROPIC_OVERFLOW = "prompt is too long: 5210 tokens > 4000 maximum";
const summaryUser = (summary: string) => ({
	role: "user",
	content: [{ type: "text", text: `${SUMMARY_PREFIX}${summary}${SUMMARY_SUFFIX}` }],
	timestamp: expect.any(Number),
});

/** A session on the scripted model with two runs behind it (well under the threshold by the reports). */
async function sessionWithHistory(settings: Record<string, unknown> = {}) {
	server = await startServer({ models: [model.faux.getModel()] });
	const id = (
		await server.request("POST", "/v1/sessions", {
			body: { model: model.spec, compaction: { reserveTokens: 1000, keepRecentTokens: 150, ...settings } },
		})
	).body.id as string;
	model.script({ content: text400("A1"), usage: usage(300) }, { content: text400("A2"), usage: usage(500) });
	await promptAndWait(server, id, text400("U1"));
	await promptAndWait(server, id, text400("U2"));
	model.requests.length = 0;
	return { s: server, id };
}

describe("a context-overflow error", () => {
	it("compacts, then sends the call once more with the summary and the recent messages", async () => {
		const { s, id } = await sessionWithHistory();
		const events = await openSse(`${s.url}/v1/sessions/${id}/events`);
		model.script(
			{ content: [], stopReason: "error", errorMessage: ANTHROPIC_OVERFLOW },
			{ content: "SUMMARY", usage: usage(400) },
			{ content: "answered", usage: usage(700) },
		);
		await promptAndWait(s, id, text400("U3"));
		expect(model.requests).toHaveLength(3);
		const [refused, summary, retried] = model.requests;
		expect(refused!.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
		expect(textOf(summary!.messages[0])).toContain(`[User]: ${text400("U1")}\n[Assistant]: ${text400("A1")}`);
		const stored = await transcript(s, id);
		// Kept: about 150 tokens, from an allowed start: the last answer and the new prompt.
		expect(retried!.messages).toEqual([summaryUser("SUMMARY"), stored[3], stored[4]]);
		// The refusal is not in the transcript; the compaction is, before the answer.
		expect(stored.map((m) => m.role)).toEqual([
			"user",
			"assistant",
			"user",
			"assistant",
			"user",
			"compaction",
			"assistant",
		]);
		expect(stored[5]).toMatchObject({ reason: "overflow", firstKeptIndex: 3 });
		expect(textOf(stored[6])).toBe("answered");
		const start = await events.waitForType("compaction_start");
		expect(start.data).toMatchObject({ reason: "overflow", messagesToSummarize: 3, messagesKept: 2 });
		const end = await events.waitForType("compaction_end");
		expect(end.data).toMatchObject({ reason: "overflow", outcome: "compacted", messageIndex: 5 });
		expect(
			events.events.filter((e) => e.event === "message_start" && e.data.message.role === "assistant"),
		).toHaveLength(1);
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.errorMessage).toBeNull();
		events.close();
	});

	it("is sent once more only: a second refusal ends the run with the provider's error", async () => {
		const { s, id } = await sessionWithHistory();
		model.script(
			{ content: [], stopReason: "error", errorMessage: ANTHROPIC_OVERFLOW },
			{ content: "SUMMARY", usage: usage(400) },
			{ content: [], stopReason: "error", errorMessage: ANTHROPIC_OVERFLOW },
			{ content: "next run", usage: usage(600) },
		);
		await promptAndWait(s, id, text400("U3"));
		expect(model.requests).toHaveLength(3);
		const stored = await transcript(s, id);
		expect(stored.at(-1)).toMatchObject({ role: "assistant", stopReason: "error", errorMessage: ANTHROPIC_OVERFLOW });
		expect((await s.request("GET", `/v1/sessions/${id}`)).body.errorMessage).toBe(ANTHROPIC_OVERFLOW);
		// The session is usable: the next prompt goes out with the compacted view.
		await promptAndWait(s, id, "again");
		expect(model.requests[3]!.messages[0]).toEqual(summaryUser("SUMMARY"));
	});

	it("is let through when the summary call fails too, and the state says why", async () => {
		const { s, id } = await sessionWithHistory();
		model.script(
			{ content: [], stopReason: "error", errorMessage: ANTHROPIC_OVERFLOW },
			{ content: [], stopReason: "error", errorMessage: "HTTP 503: overloaded" },
		);
		await promptAndWait(s, id, text400("U3"));
		expect(model.requests).toHaveLength(2);
		const stored = await transcript(s, id);
		expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user", "assistant"]);
		expect(stored.at(-1)).toMatchObject({ stopReason: "error", errorMessage: ANTHROPIC_OVERFLOW });
		const state = (await s.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.compaction.lastError).toEqual({
			at: expect.any(Number),
			reason: "overflow",
			message: "HTTP 503: overloaded",
		});
		expect(state.compaction.status).toBe("idle");
	});

	it("after a threshold compaction in the same call: compacts again, folding that summary in", async () => {
		server = await startServer({ models: [model.faux.getModel()] });
		const s = server;
		const id = (
			await s.request("POST", "/v1/sessions", {
				body: { model: model.spec, compaction: { reserveTokens: 1000, keepRecentTokens: 150 } },
			})
		).body.id as string;
		model.script(
			{ content: text400("A1"), usage: usage(2950) },
			{ content: "S1", usage: usage(100) },
			{ content: [], stopReason: "error", errorMessage: ANTHROPIC_OVERFLOW },
			{ content: "S2", usage: usage(100) },
			{ content: "answered", usage: usage(300) },
		);
		await promptAndWait(s, id, text400("U1"));
		await promptAndWait(s, id, text400("U2"));
		expect(model.requests).toHaveLength(5);
		expect(textOf(model.requests[3]!.messages[0])).toContain(
			`<previous-summary>\nS1\n</previous-summary>\n\n<conversation>\n[Assistant]: ${text400("A1")}\n</conversation>`,
		);
		const stored = await transcript(s, id);
		expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "user", "compaction", "compaction", "assistant"]);
		expect(stored[3]).toMatchObject({ reason: "threshold", summary: "S1", firstKeptIndex: 1 });
		expect(stored[4]).toMatchObject({ reason: "overflow", summary: "S2", firstKeptIndex: 2 });
		expect(model.requests[4]!.messages).toEqual([summaryUser("S2"), stored[2]]);
	});

	it("is not one when it is a rate limit: no compaction", async () => {
		const { s, id } = await sessionWithHistory();
		model.script({
			content: [],
			stopReason: "error",
			errorMessage: "HTTP 429: Rate limit reached: too many tokens per minute",
		});
		await promptAndWait(s, id, "hi");
		expect(model.requests).toHaveLength(1);
		expect((await transcript(s, id)).map((m) => m.role)).not.toContain("compaction");
	});
});

describe("a failed threshold compaction", () => {
	it("leaves the call to go on with the full context, and says why in compaction_end and the state", async () => {
		server = await startServer({ models: [model.faux.getModel()] });
		const id = (
			await server.request("POST", "/v1/sessions", {
				body: { model: model.spec, compaction: { reserveTokens: 1000, keepRecentTokens: 150 } },
			})
		).body.id as string;
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);
		model.script(
			{ content: text400("A1"), usage: usage(2950) },
			{ content: [], stopReason: "error", errorMessage: "HTTP 500: summary model down" },
			{ content: "still here", usage: usage(3100) },
		);
		await promptAndWait(server, id, text400("U1"));
		await promptAndWait(server, id, text400("U2"));
		expect(model.requests).toHaveLength(3);
		expect(model.requests[2]!.messages.map((m) => textOf(m))).toEqual([text400("U1"), text400("A1"), text400("U2")]);
		const end = await events.waitForType("compaction_end");
		expect(end.data).toEqual({
			type: "compaction_end",
			reason: "threshold",
			outcome: "failed",
			tokensBefore: 3050,
			errorMessage: "HTTP 500: summary model down",
		});
		const state = (await server.request("GET", `/v1/sessions/${id}`)).body;
		expect(state.status).toBe("idle");
		expect(state.compaction.lastError).toMatchObject({ reason: "threshold", message: "HTTP 500: summary model down" });
		expect((await transcript(server, id)).map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
		events.close();
	});
});

/** The error each provider sends when the context does not fit, and what the driver reports. */
const PROVIDERS: { api: string; label: string; status: number; body: unknown }[] = [
	{
		api: "openai-completions",
		label: "OpenAI Chat Completions (context_length_exceeded)",
		status: 400,
		body: {
			error: {
				message:
					"This model's maximum context length is 4000 tokens. However, your messages resulted in 5210 tokens. Please reduce the length of the messages.",
				type: "invalid_request_error",
				param: "messages",
				code: "context_length_exceeded",
			},
		},
	},
	{
		api: "openai-responses",
		label: "OpenAI Responses",
		status: 400,
		body: {
			error: {
				message: "Your input exceeds the context window of this model. Please adjust your input and try again.",
				type: "invalid_request_error",
				param: "input",
				code: "context_length_exceeded",
			},
		},
	},
	{
		api: "anthropic-messages",
		label: "Anthropic (prompt is too long)",
		status: 400,
		body: {
			type: "error",
			error: { type: "invalid_request_error", message: "prompt is too long: 5210 tokens > 4000 maximum" },
		},
	},
	{
		api: "google-generative-ai",
		label: "Gemini (input token count exceeds the maximum)",
		status: 400,
		body: {
			error: {
				code: 400,
				message: "The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).",
				status: "INVALID_ARGUMENT",
			},
		},
	},
];

function modelFor(api: string, baseUrl: string): Model<any> {
	return {
		id: "test-model",
		name: "Test model",
		api,
		provider: "test",
		baseUrl,
		reasoning: false,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 4000,
		maxTokens: 1000,
	};
}

describe("the providers' overflow errors", () => {
	for (const provider of PROVIDERS) {
		it(`are recognised: ${provider.label}`, async () => {
			replay.enqueue({ status: provider.status, body: JSON.stringify(provider.body) });
			const stream = streamSimple(
				modelFor(provider.api, replay.url),
				{ messages: [{ role: "user", content: "hi", timestamp: 1 }] },
				{ apiKey: "k", maxRetries: 0 } as never,
			);
			const message = await stream.result();
			expect(message.stopReason).toBe("error");
			expect(isContextOverflow(message), message.errorMessage).toBe(true);
		});
	}

	it("are told from other refusals: a bad request, a rate limit", async () => {
		replay.enqueue(
			{
				status: 400,
				body: JSON.stringify({ error: { message: "Invalid value for 'temperature'", type: "invalid_request_error" } }),
			},
			{
				status: 429,
				body: JSON.stringify({ error: { message: "Rate limit reached for tokens per min", type: "tokens" } }),
			},
		);
		for (let i = 0; i < 2; i++) {
			const message = await streamSimple(
				modelFor("openai-completions", replay.url),
				{ messages: [{ role: "user", content: "hi", timestamp: 1 }] },
				{ apiKey: "k", maxRetries: 0 } as never,
			).result();
			expect(message.stopReason).toBe("error");
			expect(isContextOverflow(message)).toBe(false);
		}
	});
});
