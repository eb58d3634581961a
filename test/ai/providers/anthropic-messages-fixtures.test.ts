import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeHttpPools } from "../../../src/ai/http.js";
import { streamAnthropicMessages } from "../../../src/ai/providers/anthropic-messages.js";
import type { Model } from "../../../src/ai/types.js";
import {
	type FixtureEntry,
	loadFixtureManifest,
	type ReplayServer,
	readFixture,
	startReplayServer,
} from "../../helpers/replay-server.js";
import { collect, expectProtocol, splitModes, trace } from "./event-protocol.js";

/**
 * Every recorded Anthropic stream in test/fixtures/providers/anthropic-messages, served by a real
 * local HTTP server whole, one byte per write and at seeded random split points, through
 * `streamAnthropicMessages`: the final message must match the manifest's expectation and the event
 * trace must be identical whatever the network chunking.
 */
const entries = loadFixtureManifest("anthropic-messages");
const SPLITS = splitModes;
const PRICES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

let server: ReplayServer;
beforeAll(async () => {
	server = await startReplayServer();
});
afterAll(async () => {
	await server?.close();
	await closeHttpPools();
});

function modelFor(id: string): Model<"anthropic-messages"> {
	return {
		id,
		name: id,
		api: "anthropic-messages",
		provider: "anthropic",
		baseUrl: server.url,
		reasoning: true,
		input: ["text", "image"],
		cost: PRICES,
		contextWindow: 200_000,
		maxTokens: 64_000,
	};
}

/** The manifest's block list, as our content blocks (server-side tool blocks are not content). */
function expectedContent(entry: FixtureEntry): unknown[] {
	const out: unknown[] = [];
	for (const block of entry.expected.content) {
		switch (block.type) {
			case "text":
				out.push({ type: "text", text: block.text });
				break;
			case "thinking":
				out.push({ type: "thinking", thinking: block.thinking, thinkingSignature: expect.any(String) });
				break;
			case "redacted_thinking":
				out.push({ type: "thinking", thinking: "", thinkingSignature: expect.any(String), redacted: true });
				break;
			case "tool_use":
				out.push({ type: "toolCall", id: block.id, name: block.name, arguments: block.input });
				break;
		}
	}
	return out;
}

function signatureLengths(entry: FixtureEntry): (number | undefined)[] {
	return entry.expected.content
		.filter(
			(b: any) => b.type === "thinking" || b.type === "redacted_thinking" || b.type === "text" || b.type === "tool_use",
		)
		.map((b: any) => b.signature_len ?? b.data_len);
}

const STOP: Record<string, string> = { end_turn: "stop", tool_use: "toolUse", max_tokens: "length", refusal: "error" };

describe("anthropic-messages recorded streams", () => {
	it("covers every file in the manifest", () => {
		expect(entries.length).toBeGreaterThanOrEqual(14);
	});

	for (const entry of entries) {
		it(`replays ${entry.file} (${entry.contains.slice(0, 60)})`, async () => {
			const body = readFixture(entry.file);
			const responseId = /"id":\s*"(msg_[^"]+)"/.exec(body.toString("utf8"))?.[1];
			const model = modelFor(entry.expected.model);
			const traces: string[][] = [];
			for (const { split, seed } of SPLITS(body)) {
				server.enqueue({ body, split, seed });
				const { events, message } = await collect(
					streamAnthropicMessages(
						model,
						{ messages: [{ role: "user", content: "hi", timestamp: 1 }] },
						{ apiKey: "k" },
					),
				);
				expectProtocol(events, message);
				traces.push(trace(events));

				const expected = entry.expected;
				expect(message.content).toEqual(expectedContent(entry));
				const sigs = signatureLengths(entry);
				message.content.forEach((block, i) => {
					if (block.type === "thinking") expect(block.thinkingSignature?.length).toBe(sigs[i]);
				});
				expect(message.responseId).toBe(responseId);
				expect(message.responseModel).toBe(expected.model);

				const u = expected.usage;
				const usage = {
					input: u.input_tokens,
					output: u.output_tokens,
					cacheRead: u.cache_read_input_tokens,
					cacheWrite: u.cache_creation_input_tokens,
				};
				expect(message.usage).toMatchObject({
					...usage,
					totalTokens: usage.input + usage.output + usage.cacheRead + usage.cacheWrite,
				});
				const cost =
					(usage.input * PRICES.input +
						usage.output * PRICES.output +
						usage.cacheRead * PRICES.cacheRead +
						usage.cacheWrite * PRICES.cacheWrite) /
					1e6;
				expect(message.usage.cost.total).toBeCloseTo(cost, 12);

				if (expected.error) {
					expect(message.stopReason).toBe("error");
					expect(events.at(-1)?.type).toBe("error");
					expect(message.errorMessage).toContain(expected.error.type);
					expect(message.errorMessage).toContain(expected.error.message);
				} else {
					expect(message.stopReason).toBe(STOP[expected.stop_reason]);
					if (message.stopReason === "error") {
						expect(message.errorMessage).toContain(expected.stop_reason);
					} else {
						expect(events.at(-1)?.type).toBe("done");
						expect(message.errorMessage).toBeUndefined();
					}
				}
			}
			for (const t of traces.slice(1)) expect(t).toEqual(traces[0]);
		});
	}

	it("records server-side tool blocks as diagnostics and keeps the text around them", async () => {
		server.enqueue({ body: readFixture("anthropic-messages/web-search-server-tool.sse"), split: "random", seed: 3 });
		const { message } = await collect(
			streamAnthropicMessages(modelFor("claude-sonnet-4-20250514"), { messages: [] }, { apiKey: "k" }),
		);
		const server_blocks = message.diagnostics?.filter((d) => d.type === "anthropic_server_block");
		expect(server_blocks).toEqual([
			{
				type: "anthropic_server_block",
				blockType: "server_tool_use",
				name: "web_search",
				id: "srvtoolu_01FYcUbzEaqqQh1WBRj1QX3h",
			},
			{ type: "anthropic_server_block", blockType: "web_search_tool_result", id: undefined },
			{
				type: "anthropic_server_block",
				blockType: "server_tool_use",
				name: "web_search",
				id: "srvtoolu_01FDqc7ruGpVRoNuD5G6jkUx",
			},
			{ type: "anthropic_server_block", blockType: "web_search_tool_result", id: undefined },
		]);
	});

	it("grows tool-call arguments as input_json_delta pieces arrive", async () => {
		server.enqueue({ body: readFixture("anthropic-messages/tool-use-streamed-args.sse"), split: "random", seed: 5 });
		const stream = streamAnthropicMessages(modelFor("claude-sonnet-4-5-20250929"), { messages: [] }, { apiKey: "k" });
		const seen: unknown[] = [];
		for await (const event of stream) {
			if (event.type === "toolcall_delta") {
				const block = event.partial.content[event.contentIndex];
				if (block?.type === "toolCall") seen.push(structuredClone(block.arguments));
			}
		}
		// Each snapshot is a growing prefix of the final arguments.
		expect(seen.length).toBeGreaterThanOrEqual(10);
		const sizes = seen.map((args) => JSON.stringify(args).length);
		for (let i = 1; i < sizes.length; i++) expect(sizes[i]).toBeGreaterThanOrEqual(sizes[i - 1]!);
		expect(seen[0]).toEqual({ website_path: "/home/user" });
		expect(seen.at(-1)).toMatchObject({ website_path: "/home/user/pace-landing" });
	});
});
