import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { streamGoogleGemini } from "../../../src/ai/providers/google-gemini.js";
import type { AssistantMessage, Model } from "../../../src/ai/types.js";
import { loadFixtureManifest, type ReplayServer, readFixture, startReplayServer } from "../../helpers/replay-server.js";
import { collect, expectProtocol, splitModes, trace } from "./event-protocol.js";

/**
 * Every recorded Gemini stream in test/fixtures/providers/google-generative-ai, served by a real
 * local HTTP server whole, byte by byte, at random split points and inside every multi-byte
 * character, through `streamGoogleGemini`: the final message must match the manifest and the event
 * trace must not depend on the chunking.
 */
const entries = loadFixtureManifest("google-generative-ai");
const PRICES = { input: 1.25, output: 10, cacheRead: 0.31, cacheWrite: 0 };

let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterAll(async () => {
	await server?.close();
	await closeHttpPools();
});

function modelFor(id: string | null): Model<"google-generative-ai"> {
	return {
		id: id ?? "gemini-2.5-pro",
		name: "Gemini",
		api: "google-generative-ai",
		provider: "google",
		baseUrl: `${server.url}/v1beta`,
		reasoning: true,
		input: ["text", "image"],
		cost: PRICES,
		contextWindow: 1_048_576,
		maxTokens: 65_536,
	};
}

function keptSignatures(message: AssistantMessage): number {
	let count = 0;
	for (const block of message.content) {
		if (block.type === "text" && block.textSignature) count++;
		if (block.type === "thinking" && block.thinkingSignature) count++;
		if (block.type === "toolCall" && block.thoughtSignature) count++;
	}
	const parts = message.diagnostics?.filter((d) => d.type === "gemini_part" && d.thoughtSignature) ?? [];
	return count + parts.length;
}

describe("google-generative-ai recorded streams", () => {
	it("covers every file in the manifest", () => {
		expect(entries.length).toBeGreaterThanOrEqual(12);
	});

	for (const entry of entries) {
		it(`replays ${entry.file} (${entry.contains.slice(0, 60)})`, async () => {
			const body = readFixture(entry.file);
			const expected = entry.expected;
			const responseIds = [...body.toString("utf8").matchAll(/"responseId":\s*"([^"]+)"/g)].map((m) => m[1]);
			const traces: string[][] = [];
			for (const { split, seed } of splitModes(body)) {
				server.enqueue({ body, split, seed });
				const { events, message } = await collect(
					streamGoogleGemini(
						modelFor(expected.model),
						{ messages: [{ role: "user", content: "hi", timestamp: 1 }] },
						{ apiKey: "k" },
					),
				);
				expectProtocol(events, message);
				traces.push(trace(events));

				const texts = message.content.filter((b) => b.type === "text");
				const thinking = message.content.filter((b) => b.type === "thinking");
				const calls = message.content.filter((b) => b.type === "toolCall");
				expect(texts.map((b) => b.text).join("")).toBe(expected.text);
				expect(thinking.map((b) => b.thinking).join("").length).toBe(expected.thought_summary_chars);
				expect(calls.map((c) => ({ name: c.name, args: c.arguments }))).toEqual(expected.function_calls);
				expect(new Set(calls.map((c) => c.id)).size).toBe(calls.length);
				expect(keptSignatures(message)).toBe(expected.thought_signatures);
				const otherKinds = new Set(
					message.diagnostics?.filter((d) => d.type === "gemini_part").map((d) => d.kind as string),
				);
				for (const kind of expected.other_part_kinds) expect(otherKinds).toContain(kind);
				if (expected.inline_images) expect(otherKinds).toContain("inlineData");

				expect(message.responseId).toBe(responseIds.at(-1));
				if (expected.model) expect(message.responseModel).toBe(expected.model);

				const u = expected.usage;
				const cached = u.cachedContentTokenCount ?? 0;
				const usage = {
					input: u.promptTokenCount - cached + (u.toolUsePromptTokenCount ?? 0),
					output: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0),
					cacheRead: cached,
					cacheWrite: 0,
					totalTokens: u.totalTokenCount,
				};
				expect(message.usage).toMatchObject(usage);
				const cost =
					(usage.input * PRICES.input + usage.output * PRICES.output + usage.cacheRead * PRICES.cacheRead) / 1e6;
				expect(message.usage.cost.total).toBeCloseTo(cost, 12);

				if (expected.finish_reason === "STOP") {
					expect(events.at(-1)?.type).toBe("done");
					expect(message.stopReason).toBe(calls.length > 0 ? "toolUse" : "stop");
				} else {
					expect(events.at(-1)?.type).toBe("error");
					expect(message.stopReason).toBe("error");
					expect(message.errorMessage).toContain(expected.finish_reason);
				}
			}
			for (const t of traces.slice(1)) expect(t).toEqual(traces[0]);
		});
	}

	it("grows Vertex partialArgs into arguments as they stream", async () => {
		server.enqueue({
			body: readFixture("google-generative-ai/streamed-function-call-args-vertex.sse"),
			split: "bytes",
		});
		const stream = streamGoogleGemini(modelFor("gemini-3.1-pro-preview"), { messages: [] }, { apiKey: "k" });
		const seen: string[] = [];
		for await (const event of stream) {
			if (event.type === "toolcall_delta" || event.type === "toolcall_end") {
				const block = event.partial.content[event.contentIndex];
				const delta = event.type === "toolcall_delta" ? ` ${JSON.stringify(event.delta)}` : "";
				if (block?.type === "toolCall") seen.push(`${event.type}${delta} -> ${JSON.stringify(block.arguments)}`);
			}
		}
		// The JSON text is written as the pieces come: the value is there (partially parsed) before its string closes.
		expect(seen).toEqual([
			'toolcall_delta "{\\"location\\":\\"Boston" -> {"location":"Boston"}',
			'toolcall_delta "\\"" -> {"location":"Boston"}',
			'toolcall_delta "}" -> {"location":"Boston"}',
			'toolcall_end -> {"location":"Boston"}',
			'toolcall_delta "{\\"location\\":\\"San Francisco" -> {"location":"San Francisco"}',
			'toolcall_delta "\\"" -> {"location":"San Francisco"}',
			'toolcall_delta "}" -> {"location":"San Francisco"}',
			'toolcall_end -> {"location":"San Francisco"}',
		]);
	});
});
