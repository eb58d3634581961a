/**
 * Differential check against the reference implementation: the same scripted model, tools and
 * hooks run through our loop/Agent and through @mariozechner/pi-agent-core 0.73.1, and the event
 * traces (payloads included, timestamps normalised) must be identical.
 *
 * The reference is the dev dependency @mariozechner/pi-agent-core 0.73.1 (and the pi-ai it
 * installs beside it). REF_AGENT_CORE points at another install instead:
 *   REF_AGENT_CORE=/path/to/node_modules/@mariozechner/pi-agent-core npx vitest run test/agent/reference-parity.test.ts
 * Without either (dev dependencies not installed) the suite skips with one line; with
 * TEST_REQUIRE_ALL=1 that is an error.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import type { AgentEvent, AgentMessage, AgentTool, StreamFn } from "../../src/index.js";
import * as ours from "../../src/index.js";
import { call, model, rawStream, type Step, scripted, tool, user } from "./support.js";

/** The installed reference package's folder: REF_AGENT_CORE, else the dev dependency; undefined when neither is there. */
function referenceDir(): string | undefined {
	if (process.env.REF_AGENT_CORE) return process.env.REF_AGENT_CORE;
	try {
		return dirname(createRequire(import.meta.url).resolve("@mariozechner/pi-agent-core/package.json"));
	} catch {
		return undefined;
	}
}

const refDir = referenceDir();
const refEntry = refDir ? join(refDir, "dist/index.js") : undefined;
const available = refEntry !== undefined && existsSync(refEntry);
if (!available) {
	const message = `reference-parity: no @mariozechner/pi-agent-core@0.73.1 at ${refDir ?? "node_modules"} (run npm ci with dev dependencies, or set REF_AGENT_CORE)`;
	if (process.env.TEST_REQUIRE_ALL === "1") throw new Error(`TEST_REQUIRE_ALL=1 and ${message}`);
	console.warn(`${message}: skipped`);
}

type Impl = typeof ours;

async function loadRef(): Promise<Impl> {
	return (await import(pathToFileURL(refEntry as string).href)) as Impl;
}

/** Replaces every timestamp with 0 and drops `undefined` fields, so traces compare by content. */
function normalise(value: unknown): unknown {
	return JSON.parse(JSON.stringify(value, (key, v) => (key === "timestamp" ? 0 : v)));
}

/** Tools whose completion order is forced by the event stream itself, identical in both runs. */
function gatedTools(order: string[]): { tools: AgentTool<any>[]; onEvent: (e: AgentEvent) => void } {
	const gates = new Map<string, () => void>();
	const slow = tool(
		"slow",
		(id) =>
			new Promise((resolve) =>
				gates.set(id, () => resolve({ content: [{ type: "text", text: `done ${id}` }], details: { id } })),
			),
	);
	const onEvent = (event: AgentEvent) => {
		if (event.type === "tool_execution_start" && event.toolCallId === order.at(-1))
			setImmediate(() => gates.get(order[0] as string)?.());
		if (event.type === "tool_execution_end") {
			const next = order[order.indexOf(event.toolCallId) + 1];
			if (next) setImmediate(() => gates.get(next)?.());
		}
	};
	return { tools: [slow], onEvent };
}

interface LoopCase {
	name: string;
	steps: () => Step[];
	tools?: () => AgentTool<any>[];
	/** A factory: configs with state (queues) must be fresh for each run. */
	config?: () => Record<string, unknown>;
	prompts?: AgentMessage[];
	continueFrom?: AgentMessage[];
	gate?: string[];
}

const loopCases: LoopCase[] = [
	{ name: "plain text", steps: () => [{ content: [ours.fauxThinking("hmm"), ours.fauxText("hello world")] }] },
	{
		name: "tool round trip with unknown tool, validation failure and throwing tool",
		steps: () => [
			{
				content: [
					call("echo", { value: "a" }, "c1"),
					call("nope", {}, "c2"),
					call("echo", { value: { nested: true } }, "c3"),
					call("boom", { value: "x" }, "c4"),
				],
			},
			{ content: "done" },
		],
		tools: () => [
			tool("echo"),
			tool("boom", async () => {
				throw new Error("kaput");
			}),
		],
	},
	{
		name: "parallel completion order differs from source order",
		steps: () => [
			{
				content: [
					call("slow", { value: "1" }, "a"),
					call("slow", { value: "2" }, "b"),
					call("slow", { value: "3" }, "c"),
				],
			},
			{ content: "ok" },
		],
		gate: ["b", "c", "a"],
	},
	{
		name: "sequential batch with progress updates",
		steps: () => [
			{ content: [call("progress", { value: "1" }, "a"), call("progress", { value: "2" }, "b")] },
			{ content: "ok" },
		],
		tools: () => [
			tool(
				"progress",
				async (_id, params, _signal, onUpdate) => {
					onUpdate?.({ content: [{ type: "text", text: "half" }], details: { v: params.value } });
					return { content: [{ type: "text", text: "whole" }], details: {} };
				},
				{ executionMode: "sequential" },
			),
		],
	},
	{
		name: "hooks: block, override, throw, terminate",
		steps: () => [
			{
				content: [
					call("echo", { value: "a" }, "c1"),
					call("echo", { value: "b" }, "c2"),
					call("echo", { value: "c" }, "c3"),
				],
			},
			{ content: "after" },
		],
		config: () => ({
			beforeToolCall: async ({ toolCall }: any) => (toolCall.id === "c1" ? { block: true, reason: "no" } : undefined),
			afterToolCall: async ({ toolCall }: any) => {
				if (toolCall.id === "c2") return { details: { x: 1 }, terminate: true };
				throw new Error("after failed");
			},
		}),
	},
	{
		name: "all results terminate",
		steps: () => [
			{ content: [call("echo", { value: "a" }, "c1"), call("echo", { value: "b" }, "c2")] },
			{ content: "never" },
		],
		config: () => ({ afterToolCall: async () => ({ terminate: true }) }),
	},
	{
		name: "error turn",
		steps: () => [
			{
				content: [ours.fauxText("partial"), call("echo", { value: "a" })],
				stopReason: "error",
				errorMessage: "HTTP 500",
			},
		],
	},
	{
		name: "stream without start",
		steps: () => [
			() => rawStream([{ type: "done", reason: "stop", message: ours.fauxAssistantMessage("late", { timestamp: 1 }) }]),
		],
	},
	{
		name: "steering and follow-ups",
		steps: () => [
			{ content: [call("echo", { value: "a" }, "c1")] },
			{ content: "two" },
			{ content: "three" },
			{ content: "four" },
		],
		config: () => {
			const steer = [[user("early")], [], [user("mid")]];
			const follow = [[user("later")]];
			return {
				getSteeringMessages: async () => steer.shift() ?? [],
				getFollowUpMessages: async () => follow.shift() ?? [],
			};
		},
	},
	{
		name: "shouldStopAfterTurn",
		steps: () => [{ content: [call("echo", { value: "a" }, "c1")] }, { content: "never" }],
		config: () => ({ shouldStopAfterTurn: async ({ toolResults }: any) => toolResults.length > 0 }),
	},
	{ name: "continue", steps: () => [{ content: "resumed" }], continueFrom: [user("q")] },
];

async function runLoopCase(impl: Impl, c: LoopCase): Promise<unknown[]> {
	const events: unknown[] = [];
	const gate = c.gate ? gatedTools(c.gate) : undefined;
	const context = {
		systemPrompt: "sys",
		messages: c.continueFrom ? [...c.continueFrom] : [],
		tools: gate?.tools ?? c.tools?.() ?? [tool("echo")],
	};
	const config = { model, convertToLlm: (m: AgentMessage[]) => m, ...c.config?.() } as any;
	const streamFn = scripted(c.steps());
	const sink = (event: AgentEvent) => {
		events.push(normalise(event));
		gate?.onEvent(event);
	};
	const result = c.continueFrom
		? await impl.runAgentLoopContinue(context, config, sink, undefined, streamFn)
		: await impl.runAgentLoop(c.prompts ?? [user("hi")], context, config, sink, undefined, streamFn);
	events.push({ result: normalise(result), calls: normalise(streamFn.calls.map((x) => x.context)) });
	return events;
}

/** Validation messages come from different TypeBox versions; compare only that both failed validation. */
function maskValidationText(events: unknown[]): unknown[] {
	return JSON.parse(JSON.stringify(events), (_key, v) =>
		typeof v === "string" && v.startsWith("Validation failed for tool") ? "<validation failure>" : v,
	);
}

describe.skipIf(!available)("parity with pi-agent-core 0.73.1", () => {
	for (const c of loopCases) {
		it(`loop: ${c.name}`, async () => {
			const ref = await loadRef();
			const expected = maskValidationText(await runLoopCase(ref, c));
			const actual = maskValidationText(await runLoopCase(ours, c));
			expect(actual).toEqual(expected);
		});
	}

	interface AgentCase {
		name: string;
		run: (AgentClass: Impl["Agent"], streamFn: StreamFn, record: (e: unknown) => void) => Promise<void>;
		steps: () => Step[];
	}

	const agentCases: AgentCase[] = [
		{
			name: "prompt with steering and follow-up queued mid-run",
			steps: () => [{ content: [call("echo", { value: "a" }, "c1")] }, { content: "two" }, { content: "three" }],
			run: async (AgentClass, streamFn, record) => {
				const agent = new AgentClass({ initialState: { model, tools: [tool("echo")] }, streamFn });
				agent.subscribe((event) => {
					record(event);
					if (event.type === "tool_execution_start") {
						agent.steer(user("steer"));
						agent.followUp(user("follow"));
					}
				});
				await agent.prompt("go");
				record({ messages: agent.state.messages, error: agent.state.errorMessage });
			},
		},
		{
			name: "continue after assistant drains steering then follow-ups",
			steps: () => [{ content: "one" }, { content: "two" }, { content: "three" }],
			run: async (AgentClass, streamFn, record) => {
				const agent = new AgentClass({
					initialState: { model, messages: [user("q"), ours.fauxAssistantMessage("a", { timestamp: 1 })] },
					streamFn,
				});
				agent.subscribe((event) => record(event));
				agent.steer(user("s1"));
				agent.steer(user("s2"));
				agent.followUp(user("f1"));
				await agent.continue();
				record({ messages: agent.state.messages });
				await agent.continue().catch((e: Error) => record({ thrown: e.message }));
			},
		},
		{
			name: "throwing listener and throwing stream function",
			steps: () => [{ content: "ok" }],
			run: async (AgentClass, streamFn, record) => {
				const agent = new AgentClass({ initialState: { model }, streamFn });
				const off = agent.subscribe((event) => {
					record(event);
					if (event.type === "message_end") throw new Error("listener broke");
				});
				await agent.prompt("go");
				off();
				agent.subscribe((event) => record(event));
				agent.streamFn = () => {
					throw new Error("no network");
				};
				await agent.prompt("again");
				record({ messages: agent.state.messages, error: agent.state.errorMessage, streaming: agent.state.isStreaming });
			},
		},
		{
			name: "abort mid-stream",
			steps: () => [{ content: "one two three four five", delayMs: 1 }],
			run: async (AgentClass, streamFn, record) => {
				const agent = new AgentClass({ initialState: { model }, streamFn });
				agent.subscribe((event) => {
					record(event);
					if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") agent.abort();
				});
				await agent.prompt("go");
				record({ messages: agent.state.messages, error: agent.state.errorMessage });
			},
		},
		{
			name: "abort while a tool runs, images in the prompt, state snapshots per event",
			steps: () => [
				{ content: [call("wait", { value: "x" }, "w1"), call("echo", { value: "y" }, "e1")] },
				{ content: "never" },
			],
			run: async (AgentClass, streamFn, record) => {
				const waiting = tool("wait", (_id, _params, signal) => {
					return new Promise((_resolve, reject) => {
						signal?.addEventListener("abort", () => reject(new Error("tool aborted")), { once: true });
					});
				});
				const agent = new AgentClass({ initialState: { model, tools: [waiting, tool("echo")] }, streamFn });
				agent.subscribe((event) => {
					record({
						event,
						pending: [...agent.state.pendingToolCalls],
						streaming: agent.state.isStreaming,
						count: agent.state.messages.length,
					});
					if (event.type === "tool_execution_end" && event.toolCallId === "e1") setImmediate(() => agent.abort());
				});
				await agent.prompt("look", [{ type: "image", data: "AAAA", mimeType: "image/png" }]);
				record({ messages: agent.state.messages, error: agent.state.errorMessage });
			},
		},
		{
			name: "listeners subscribed and unsubscribed during a delivery, synchronous and awaited",
			steps: () => [{ content: "one two three four" }],
			run: async (AgentClass, streamFn, record) => {
				const agent = new AgentClass({ initialState: { model }, streamFn });
				let n = 0;
				const late = (event: AgentEvent) => record({ late: `${n}:${event.type}` });
				const second = (event: AgentEvent) => record({ second: `${n}:${event.type}` });
				const third = (event: AgentEvent) => record({ third: `${n}:${event.type}` });
				let offSecond = (): unknown => undefined;
				let offThird = (): unknown => undefined;
				let offLate = (): unknown => undefined;
				agent.subscribe((event) => {
					n++;
					record({ first: `${n}:${event.type}` });
					// Subscribed during a delivery: called for this event already.
					if (n === 2) offLate = agent.subscribe(late);
					// Unsubscribed before its turn: not called.
					if (n === 4) record({ removed: offThird() });
					// Unsubscribed and subscribed again: called once, last.
					if (n === 6) {
						offSecond();
						offSecond = agent.subscribe(second);
					}
					// An awaited listener that changes the list before the others' turn.
					if (n === 8) {
						return Promise.resolve().then(() => {
							record({ removed: offLate(), again: offLate() });
							offThird = agent.subscribe(third);
						});
					}
					// Subscribing a subscribed listener again changes nothing.
					if (n === 10) agent.subscribe(second);
					return undefined;
				});
				offSecond = agent.subscribe(second);
				offThird = agent.subscribe(third);
				await agent.prompt("go");
				record({ messages: agent.state.messages });
			},
		},
		{
			name: "continue from a tool result",
			steps: () => [{ content: "resumed" }],
			run: async (AgentClass, streamFn, record) => {
				const agent = new AgentClass({
					initialState: {
						model,
						messages: [
							user("q"),
							ours.fauxAssistantMessage([call("echo", { value: "a" }, "c1")], { stopReason: "toolUse", timestamp: 1 }),
							{ role: "toolResult", toolCallId: "c1", toolName: "echo", content: [], isError: false, timestamp: 1 },
						],
					},
					streamFn,
				});
				agent.subscribe((event) => record(event));
				await agent.continue();
				record({ messages: agent.state.messages });
			},
		},
	];

	for (const c of agentCases) {
		it(`Agent: ${c.name}`, async () => {
			const ref = await loadRef();
			const traces: unknown[][] = [];
			for (const impl of [ref, ours]) {
				const trace: unknown[] = [];
				await c.run(impl.Agent, scripted(c.steps()), (e) => trace.push(normalise(e)));
				traces.push(trace);
			}
			expect(traces[1]).toEqual(traces[0]);
		});
	}
});

const piAiEntry = refDir ? join(refDir, "..", "pi-ai", "dist", "index.js") : undefined;

describe.skipIf(!available || !piAiEntry || !existsSync(piAiEntry))(
	"validateToolArguments parity with pi-ai 0.73.1",
	() => {
		const schema = {
			type: "object",
			properties: {
				n: { type: "number" },
				i: { type: "integer" },
				b: { type: "boolean" },
				s: { type: "string" },
				u: { type: ["integer", "null"] },
				a: { type: "array", items: { type: "number" } },
				o: { type: "object", properties: { deep: { type: "boolean" } } },
				e: { enum: ["x", "y"] },
			},
			required: ["n"],
		};
		const inputs: Record<string, any>[] = [
			{ n: 1 },
			{ n: "5" },
			{ n: "2.5", i: "3", b: "true", s: 7, u: "4", a: ["1", 2], o: { deep: "false" } },
			{ n: true, b: 1, s: false, u: null },
			{ n: null, b: 0, s: null },
			{ n: "abc" },
			{ i: 1 },
			{ n: 1, i: "1.5" },
			{ n: 1, e: "z" },
			{ n: 1, a: "nope" },
			{ n: 1, o: { deep: "maybe" } },
		];
		for (const args of inputs) {
			it(`agrees on ${JSON.stringify(args)}`, async () => {
				const piAi = await import(pathToFileURL(piAiEntry as string).href);
				const outcome = (fn: typeof ours.validateToolArguments) => {
					try {
						return {
							ok: fn(
								{ name: "t", description: "", parameters: schema as any },
								{ type: "toolCall", id: "1", name: "t", arguments: structuredClone(args) },
							),
						};
					} catch {
						return { failed: true };
					}
				};
				expect(outcome(ours.validateToolArguments)).toEqual(outcome(piAi.validateToolArguments));
			});
		}
	},
);
