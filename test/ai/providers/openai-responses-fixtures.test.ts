import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { decodeTextSignature, streamOpenAIResponses } from "../../../src/ai/providers/openai-responses.js";
import { loadFixtureManifest, type ReplayServer, readFixture, startReplayServer } from "../../helpers/replay-server.js";
import { checkProtocol, drain, testModel, trace } from "./openai-protocol.js";

/**
 * Replays every recorded Responses stream in test/fixtures/providers/openai-responses through
 * the provider (whole, one byte at a time for files up to 4 kB, cut inside every multi-byte character, random splits), and checks the final
 * message against manifest.json, the event sequence against the protocol, and that every split
 * gives the same events.
 */
const entries = loadFixtureManifest("openai-responses");
describe("openai-responses: recorded streams", () => {
	let server: ReplayServer;
	beforeAll(async () => {
		server = await startReplayServer();
	});
	afterAll(async () => {
		await server.close();
		await closeHttpPools();
	});

	it("the manifest lists the recorded files", () => {
		expect(entries.length).toBeGreaterThanOrEqual(9);
	});

	for (const entry of entries) {
		it(`${entry.file} (${entry.contains})`, async () => {
			const body = readFixture(entry.file);
			const expected = entry.expected;
			const splits = [
				{ split: "whole" as const },
				...(body.length <= 4096 ? [{ split: "bytes" as const }] : []),
				{ split: "utf8" as const },
				{ split: "random" as const, seed: 3 },
				{ split: "random" as const, seed: 42 },
			];
			let firstTrace: string[] | undefined;
			for (const how of splits) {
				server.enqueue({ body, ...how });
				const model = testModel("openai-responses", `${server.url}/v1`, { reasoning: true });
				const { events, message } = await drain(streamOpenAIResponses(model, { messages: [] }, { apiKey: "sk-test" }));
				const label = `${entry.file} ${how.split}`;
				checkProtocol(events, message);
				const eventTrace = trace(events);
				if (firstTrace) expect(eventTrace, label).toEqual(firstTrace);
				firstTrace = eventTrace;

				if (expected.status === "failed") {
					expect(message.stopReason).toBe("error");
					expect(message.errorMessage).toBe(`${expected.error.code}: ${expected.error.message}`);
					expect(message.content).toEqual([]);
					expect(message.responseId).toMatch(/^resp_/);
					continue;
				}

				// Blocks: reasoning → thinking (signature = the item, with encrypted_content when sent),
				// message → text (signature = item id and phase), function_call → toolCall; others skipped.
				const outputs = expected.output.filter((item: any) =>
					["reasoning", "message", "function_call"].includes(item.type),
				);
				expect(message.content.map((block) => block.type)).toEqual(
					outputs.map(
						(item: any) => ({ reasoning: "thinking", message: "text", function_call: "toolCall" })[item.type as string],
					),
				);
				outputs.forEach((item: any, index: number) => {
					const block = message.content[index]!;
					if (block.type === "thinking") {
						const replay = JSON.parse(block.thinkingSignature!);
						expect(replay.type).toBe("reasoning");
						expect(replay.id).toMatch(/^rs_/);
						expect(typeof replay.encrypted_content === "string").toBe(item.encrypted_content);
						if (item.summary_parts > 0)
							expect(block.thinking.split("\n\n").length).toBeGreaterThanOrEqual(item.summary_parts);
						else expect(block.thinking).toBe("");
					} else if (block.type === "text") {
						expect(block.text).toBe(item.text);
						const signature = decodeTextSignature(block.textSignature);
						expect(signature?.id).toMatch(/^msg_/);
						expect(signature?.phase).toBe(item.phase);
					} else if (block.type === "toolCall") {
						expect(block.name).toBe(item.name);
						expect(block.id.startsWith(`${item.call_id}|fc_`)).toBe(true);
						expect(block.arguments).toEqual(item.arguments);
					}
				});

				const hasCalls = outputs.some((item: any) => item.type === "function_call");
				expect(message.stopReason).toBe(hasCalls ? "toolUse" : "stop");
				const usage = expected.usage;
				const cached = usage.input_tokens_details?.cached_tokens ?? 0;
				expect(message.usage).toMatchObject({
					input: usage.input_tokens - cached,
					output: usage.output_tokens,
					cacheRead: cached,
					totalTokens: usage.total_tokens,
				});
				expect(message.usage.cost.total).toBeCloseTo(
					((usage.input_tokens - cached) * 1.25 + usage.output_tokens * 10 + cached * 0.125) / 1e6,
					12,
				);
				expect(message.responseId).toMatch(/^resp_/);
			}
		});
	}
});
