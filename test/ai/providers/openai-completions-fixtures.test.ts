import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { streamOpenAICompletions } from "../../../src/ai/providers/openai-completions.js";
import { loadFixtureManifest, type ReplayServer, readFixture, startReplayServer } from "../../helpers/replay-server.js";
import { checkProtocol, drain, testModel, trace } from "./openai-protocol.js";

/**
 * Replays every recorded Chat Completions stream in test/fixtures/providers/openai-completions
 * through the provider, served by a real local HTTP server whole, one byte at a time (files up to
 * 4 kB: a byte per write is slow on loopback TCP), cut inside every multi-byte UTF-8 character, and
 * split at random offsets, and checks the final message against manifest.json and the
 * event sequence against the protocol — the same at every split.
 */
const entries = loadFixtureManifest("openai-completions");
describe("openai-completions: recorded streams", () => {
	let server: ReplayServer;
	beforeAll(async () => {
		server = await startReplayServer();
	});
	afterAll(async () => {
		await server.close();
		await closeHttpPools();
	});

	it("the manifest lists the recorded files", () => {
		expect(entries.length).toBeGreaterThanOrEqual(13);
	});

	for (const entry of entries) {
		it(`${entry.file} (${entry.contains})`, async () => {
			const body = readFixture(entry.file);
			const expected = entry.expected;
			const choice = expected.choices[0];
			const splits = [
				{ split: "whole" as const },
				...(body.length <= 4096 ? [{ split: "bytes" as const }] : []),
				{ split: "utf8" as const },
				{ split: "random" as const, seed: 1 },
				{ split: "random" as const, seed: 99 },
			];
			let firstTrace: string[] | undefined;
			for (const how of splits) {
				server.enqueue({ body, ...how });
				const model = testModel("openai-completions", `${server.url}/v1`);
				const { events, message } = await drain(
					streamOpenAICompletions(model, { messages: [] }, { apiKey: "sk-test" }),
				);
				const label = `${entry.file} ${how.split}${"seed" in how ? how.seed : ""}`;
				expect(message.stopReason, label).toBe(
					choice.finish_reason === "tool_calls" ? "toolUse" : choice.finish_reason === "length" ? "length" : "stop",
				);
				expect(message.errorMessage, label).toBeUndefined();

				// Content: text (or refusal) first, then the tool calls in order.
				const text = (choice.content ?? "") + (choice.refusal ?? "");
				const expectedContent: unknown[] = [];
				if (text !== "") expectedContent.push({ type: "text", text });
				for (const call of choice.tool_calls ?? []) {
					expectedContent.push({ type: "toolCall", id: call.id, name: call.name, arguments: call.arguments });
				}
				expect(message.content, label).toEqual(expectedContent);

				// Usage: input excludes cached tokens; cost from the model's prices.
				const usage = expected.usage;
				const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
				expect(message.usage, label).toMatchObject({
					input: usage.prompt_tokens - cached,
					output: usage.completion_tokens,
					cacheRead: cached,
					totalTokens: usage.total_tokens,
				});
				expect(message.usage.cost.total).toBeCloseTo(
					((usage.prompt_tokens - cached) * 1.25 + usage.completion_tokens * 10 + cached * 0.125) / 1e6,
					12,
				);
				expect(message.responseId).toMatch(/^chatcmpl-/);
				expect(message.responseModel).toBe(expected.model);

				const kinds = checkProtocol(events, message);
				expect(kinds).toEqual(
					expectedContent.map((block: any) => (block.type === "toolCall" ? "toolcall" : block.type)),
				);
				const eventTrace = trace(events);
				if (firstTrace) expect(eventTrace, label).toEqual(firstTrace);
				firstTrace = eventTrace;
			}
		});
	}
});
