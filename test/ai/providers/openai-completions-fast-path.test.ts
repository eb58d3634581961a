import { describe, expect, it } from "vitest";
import { contentOnlyDelta } from "../../../src/ai/providers/openai-completions.js";
import { loadFixtureManifest, readFixture } from "../../helpers/replay-server.js";

/**
 * The Chat Completions fast path (content-only deltas read without JSON.parse) must agree with
 * JSON.parse on every chunk it accepts, and refuse every chunk that carries anything else.
 */
const base = {
	id: "chatcmpl-1",
	object: "chat.completion.chunk",
	created: 1,
	model: "gpt-4o",
	choices: [{ index: 0, delta: { content: "Hi" }, logprobs: null, finish_reason: null }],
	usage: null,
	obfuscation: "abc",
};
const json = (value: unknown) => JSON.stringify(value);

describe("contentOnlyDelta", () => {
	it("reads a plain content delta, with or without logprobs", () => {
		expect(contentOnlyDelta(json(base))).toBe("Hi");
		expect(
			contentOnlyDelta(json({ ...base, choices: [{ index: 0, delta: { content: "a—👋" }, finish_reason: null }] })),
		).toBe("a—👋");
		expect(
			contentOnlyDelta(
				json({ ...base, choices: [{ index: 0, delta: { content: "" }, logprobs: null, finish_reason: null }] }),
			),
		).toBe("");
	});

	it("refuses anything else", () => {
		const refuse = [
			{ ...base, choices: [{ index: 0, delta: { content: 'say "hi"\n' }, logprobs: null, finish_reason: null }] }, // escapes
			{ ...base, choices: [{ index: 0, delta: { content: "x" }, logprobs: null, finish_reason: "stop" }] },
			{
				...base,
				choices: [{ index: 0, delta: { role: "assistant", content: "x" }, logprobs: null, finish_reason: null }],
			},
			{
				...base,
				choices: [{ index: 0, delta: { content: "x", reasoning_content: "r" }, logprobs: null, finish_reason: null }],
			},
			{ ...base, choices: [{ index: 0, delta: { content: "x" }, logprobs: { content: [] }, finish_reason: null }] },
			{
				...base,
				choices: [
					{ index: 0, delta: { content: "x" }, logprobs: null, finish_reason: null },
					{ index: 1, delta: { content: "y" }, logprobs: null, finish_reason: null },
				],
			},
			{ ...base, usage: { prompt_tokens: 1, completion_tokens: 1 } },
			{ id: "chatcmpl-1", usage: { prompt_tokens: 1 }, choices: base.choices }, // usage before the choices
			{ error: { message: "boom" } },
			{ ...base, error: "rate limited" }, // a plain string error field
		];
		for (const chunk of refuse) expect(contentOnlyDelta(json(chunk)), json(chunk)).toBeUndefined();
		expect(contentOnlyDelta(json(base).slice(0, -1))).toBeUndefined(); // cut short: JSON.parse must report it
		const rawTab = json(base).replace('"content":"Hi"', '"content":"H\ti"');
		expect(() => JSON.parse(rawTab)).toThrow();
		expect(contentOnlyDelta(rawTab)).toBeUndefined(); // invalid JSON: JSON.parse must report it
	});

	it("agrees with JSON.parse on every recorded chunk", () => {
		let accepted = 0;
		for (const { file } of loadFixtureManifest("openai-completions")) {
			const text = readFixture(file).toString("utf8");
			for (const line of text.split(/\r?\n/)) {
				if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
				const data = line.slice(6);
				const fast = contentOnlyDelta(data);
				if (fast === undefined) continue;
				accepted++;
				const chunk = JSON.parse(data);
				expect(chunk.choices).toHaveLength(1);
				expect(chunk.choices[0].delta).toEqual({ content: fast });
				expect(chunk.choices[0].finish_reason).toBeNull();
				expect(chunk.usage ?? null).toBeNull();
			}
		}
		expect(accepted).toBeGreaterThan(100);
	});
});
