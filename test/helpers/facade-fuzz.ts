/**
 * Request bodies for the facades' part of the route fuzz test: what their clients send (the OpenAI
 * SDKs' Chat Completions and Responses requests, AG-UI's `RunAgentInput`, pi's streamProxy body),
 * with tool declarations, tool calls and their results, images and settings, filled with values
 * from the seeded PRNG (valid ones, the nasty strings, long ones), then mutated or broken as
 * `bodyText` breaks any body. The schemas of these routes are open objects, so the schema
 * sampler alone seldom gets past them to the request mapping.
 */
import { bodyText, NASTY_STRINGS, type Random, type SchemaSampler } from "./openapi-fuzz.js";

/** A facade route and a body for it. */
export interface FacadeCall {
	path: string;
	body: string;
}

const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** Values the facades read as names, ids and texts. */
function text(r: Random): string {
	return r.chance(0.8) ? r.pick(["hello", "pick_color", "call_1", "faux/echo", "x"]) : r.pick(NASTY_STRINGS);
}

function toolName(r: Random): string {
	return r.chance(0.6)
		? r.pick(["pick_color", "lookup", "calculate", "a-b_c"])
		: r.pick(["a b c", "x".repeat(65), ...NASTY_STRINGS]);
}

function parameters(r: Random): unknown {
	if (r.chance(0.75)) return r.pick([{ type: "object", properties: { q: { type: "string" } } }, { type: "object" }]);
	return r.pick([{}, { type: "string" }, "x", null, [], { type: "object", properties: "x" }]);
}

function dataUrl(r: Random): string {
	return r.pick([
		`data:image/png;base64,${PIXEL}`,
		"data:image/png;base64,!!!",
		"data:text/html;base64,PGI+",
		"data:image/png;base64,",
		"https://example.com/cat.png",
		`data:image/png;base64,${"A".repeat(5)}`,
	]);
}

/**
 * The model of a request: `strict/m` (a provider that refuses what OpenAI refuses, see
 * strict-provider.ts; the server must be configured with it), the echo model (whose `/tool`
 * commands call tools), or something nasty.
 */
function model(r: Random): string {
	const roll = r.next();
	return roll < 0.5 ? "strict/m" : roll < 0.85 ? "faux/echo" : text(r);
}

/** A prompt: text, a `/tool` command of the echo model, or something nasty. */
function prompt(r: Random): string {
	return r.pick([
		"hello",
		'/tool pick_color {"q": "which?"}',
		'/tool calculate {"expression": "1+2"}',
		'/tool lookup {"q": 1}',
		...NASTY_STRINGS,
	]);
}

function chatCompletion(r: Random): unknown {
	const callId = r.pick(["call_1", "call_2", text(r)]);
	const user = r.chance(0.7)
		? { role: "user", content: prompt(r) }
		: {
				role: "user",
				content: [
					{ type: "text", text: prompt(r) },
					{ type: "image_url", image_url: { url: dataUrl(r), detail: r.pick(["auto", "low", "x"]) } },
				],
			};
	const messages: unknown[] = [];
	if (r.chance(0.3)) messages.push({ role: r.pick(["system", "developer"]), content: text(r) });
	messages.push(user);
	if (r.chance(0.4)) {
		messages.push({
			role: "assistant",
			content: r.chance(0.5) ? null : text(r),
			tool_calls: [
				{
					id: callId,
					type: "function",
					function: { name: toolName(r), arguments: r.pick(["{}", "{bad", '{"q":1}', ""]) },
				},
			],
		});
		messages.push({ role: "tool", tool_call_id: r.chance(0.8) ? callId : text(r), content: text(r) });
	}
	return {
		model: model(r),
		messages,
		...(r.chance(0.5) ? { stream: r.chance(0.5) } : {}),
		...(r.chance(0.2) ? { stream_options: { include_usage: true } } : {}),
		...(r.chance(0.6)
			? {
					tools: [
						{
							type: r.chance(0.9) ? "function" : text(r),
							function: { name: toolName(r), description: text(r), parameters: parameters(r) },
						},
					],
				}
			: {}),
		...(r.chance(0.2)
			? { tool_choice: r.pick(["auto", "none", "required", { type: "function", function: { name: "x" } }]) }
			: {}),
		...(r.chance(0.2) ? { max_tokens: r.pick([1, 100, -1, 1e20]), temperature: r.pick([0, 1, 2, -1]) } : {}),
	};
}

function response(r: Random): unknown {
	const callId = r.pick(["call_1", text(r)]);
	const input = r.chance(0.4)
		? prompt(r)
		: [
				{
					role: "user",
					content: r.chance(0.6)
						? prompt(r)
						: [
								{ type: "input_text", text: prompt(r) },
								{ type: "input_image", image_url: dataUrl(r) },
							],
				},
				...(r.chance(0.4)
					? [
							{ type: "function_call", call_id: callId, name: toolName(r), arguments: r.pick(["{}", "{bad"]) },
							{ type: "function_call_output", call_id: r.chance(0.8) ? callId : text(r), output: text(r) },
						]
					: []),
				...(r.chance(0.1) ? [{ type: "item_reference", id: text(r) }] : []),
			];
	return {
		model: model(r),
		input,
		...(r.chance(0.3) ? { instructions: text(r) } : {}),
		...(r.chance(0.5) ? { stream: r.chance(0.5) } : {}),
		...(r.chance(0.2) ? { previous_response_id: r.pick(["resp_x", text(r)]) } : {}),
		...(r.chance(0.6)
			? {
					tools: [
						{
							type: r.chance(0.9) ? "function" : text(r),
							name: toolName(r),
							description: text(r),
							parameters: parameters(r),
						},
					],
				}
			: {}),
		...(r.chance(0.2) ? { store: r.chance(0.5), max_output_tokens: r.pick([1, -1, 1e20]) } : {}),
	};
}

function runAgentInput(r: Random): unknown {
	const callId = r.pick(["call_1", text(r)]);
	const messages: unknown[] = [];
	if (r.chance(0.3)) messages.push({ id: "s1", role: r.pick(["system", "developer"]), content: text(r) });
	messages.push({
		id: r.pick(["u1", "wh-0", text(r)]),
		role: "user",
		content: r.chance(0.7)
			? prompt(r)
			: [
					{ type: "text", text: prompt(r) },
					r.chance(0.5)
						? {
								type: "image",
								source: {
									type: "data",
									value: r.pick([PIXEL, "!!!", ""]),
									mimeType: r.pick(["image/png", "text/html"]),
								},
							}
						: { type: "image", source: { type: "url", value: dataUrl(r) } },
				],
	});
	if (r.chance(0.4)) {
		messages.push({
			id: "a1",
			role: "assistant",
			toolCalls: [{ id: callId, type: "function", function: { name: toolName(r), arguments: r.pick(["{}", "{bad"]) } }],
		});
		messages.push({ id: "t1", role: "tool", toolCallId: r.chance(0.8) ? callId : text(r), content: text(r) });
	}
	return {
		threadId: r.chance(0.8) ? `thread-${r.int(1000)}` : r.pick(["thread-1", text(r) || "t"]),
		runId: r.pick(["run-1", text(r) || "r"]),
		...(r.chance(0.5) ? { protocolVersion: r.pick(["1.0", "0.0.59", "2", "x"]) } : {}),
		messages,
		tools: r.chance(0.6) ? [{ name: toolName(r), description: text(r), parameters: parameters(r) }] : [],
		context: r.chance(0.3) ? [{ description: text(r), value: text(r) }] : [],
		state: r.pick([{}, null, { step: 1 }, "x"]),
		forwardedProps: r.chance(0.4)
			? {
					wheelhouse: {
						...(r.chance(0.5) ? { model: model(r) } : {}),
						...(r.chance(0.3) ? { tools: [r.pick(["calculate", "files__*", toolName(r)])] } : {}),
						...(r.chance(0.2) ? { thinkingLevel: r.pick(["off", "high", text(r)]) } : {}),
						...(r.chance(0.2) ? { profile: text(r) } : {}),
					},
				}
			: {},
	};
}

function piStream(r: Random): unknown {
	const callId = r.pick(["call_1", text(r)]);
	const messages: unknown[] = [
		{
			role: "user",
			content: r.chance(0.7)
				? prompt(r)
				: [
						{ type: "text", text: prompt(r) },
						{ type: "image", data: r.pick([PIXEL, "!!!"]), mimeType: r.pick(["image/png", "text/html"]) },
					],
			timestamp: r.pick([1, -1, 1e20, "x"]),
		},
	];
	if (r.chance(0.4)) {
		messages.push({
			role: "assistant",
			content: [{ type: "toolCall", id: callId, name: toolName(r), arguments: r.pick([{}, "x", null]) }],
			api: "faux",
			provider: "faux",
			model: "echo",
			usage: {
				input: 0,
				output: 0,
				cacheRead: 0,
				cacheWrite: 0,
				totalTokens: 0,
				cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
			},
			stopReason: r.pick(["toolUse", "stop", text(r)]),
			timestamp: 1,
		});
		messages.push({
			role: "toolResult",
			toolCallId: r.chance(0.8) ? callId : text(r),
			toolName: toolName(r),
			content: [{ type: "text", text: text(r) }],
			isError: r.chance(0.2),
			timestamp: 1,
		});
	}
	return {
		model: (() => {
			const spec = model(r);
			const slash = spec.indexOf("/");
			return slash > 0
				? { provider: spec.slice(0, slash), id: spec.slice(slash + 1) }
				: { provider: spec, id: text(r) };
		})(),
		context: {
			...(r.chance(0.3) ? { systemPrompt: text(r) } : {}),
			messages,
			...(r.chance(0.5) ? { tools: [{ name: toolName(r), description: text(r), parameters: parameters(r) }] } : {}),
		},
		...(r.chance(0.3)
			? { options: { maxTokens: r.pick([1, -1, 1e20]), reasoning: r.pick(["low", "x"]), temperature: r.pick([0, 3]) } }
			: {}),
	};
}

const FACADES: [string, (r: Random) => unknown][] = [
	["/openai/v1/chat/completions", chatCompletion],
	["/openai/v1/responses", response],
	["/agui/v1/run", runAgentInput],
	["/api/stream", piStream],
];

/** One facade request: a client-shaped body, sometimes mutated, sometimes broken as `bodyText` breaks bodies. */
export function facadeCall(r: Random, sampler: SchemaSampler): FacadeCall {
	const [path, make] = r.pick(FACADES);
	let value = make(r);
	if (r.chance(0.3)) value = sampler.mutate(value);
	const body = r.chance(0.7) ? JSON.stringify(value) : bodyText(r, sampler, value);
	return { path, body };
}
