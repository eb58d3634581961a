/**
 * Helpers of the `POST /api/stream` tests: pi's own `Agent` from `@mariozechner/pi-agent-core`
 * 0.73.1 with its unmodified `streamProxy` as the stream function (the client under test), the
 * same Agent calling a model directly (what the proxy must reproduce), and a raw reader of the
 * proxy's wire.
 */
import { Agent, type AgentMessage, type AgentTool, streamProxy } from "@mariozechner/pi-agent-core";
import type { Model } from "../../src/ai/types.js";

export interface AgentSetup {
	model: Model<any>;
	systemPrompt?: string;
	tools?: AgentTool<any>[];
	thinkingLevel?: "off" | "minimal" | "low" | "medium" | "high";
}

function agentWith(setup: AgentSetup, streamFn: (...args: any[]) => any): Agent {
	return new Agent({
		initialState: {
			model: setup.model as any,
			systemPrompt: setup.systemPrompt ?? "",
			tools: setup.tools ?? [],
			thinkingLevel: setup.thinkingLevel ?? "off",
		},
		streamFn: streamFn as any,
	});
}

/**
 * pi's Agent whose model calls go through `streamProxy` to `proxyUrl` with `authToken`; `extra`
 * adds stream options (e.g. `headers`).
 */
export function proxyAgent(proxyUrl: string, authToken: string, setup: AgentSetup, extra: object = {}): Agent {
	return agentWith(setup, (model, context, options) =>
		streamProxy(model, context, { ...options, ...extra, proxyUrl, authToken }),
	);
}

/** pi's Agent calling `stream` (a model's stream function) directly, in the same process. */
export function directAgent(stream: (...args: any[]) => any, setup: AgentSetup): Agent {
	return agentWith(setup, stream);
}

/** A transcript without what differs between two runs by construction: the timestamps. */
export function comparable(messages: AgentMessage[]): unknown[] {
	return JSON.parse(JSON.stringify(messages, (key, value) => (key === "timestamp" ? 0 : value)));
}

/** A tool for pi's Agent (plain JSON Schema parameters) that adds two numbers. */
export const addTool: AgentTool<any> = {
	name: "add",
	label: "Add",
	description: "Adds two numbers.",
	parameters: {
		type: "object",
		properties: { a: { type: "number" }, b: { type: "number" } },
		required: ["a", "b"],
	} as any,
	async execute(_id, params) {
		const { a, b } = params as { a: number; b: number };
		return { content: [{ type: "text", text: String(a + b) }], details: undefined };
	},
};

export interface ProxyWire {
	status: number;
	contentType: string | null;
	text: string;
	/** The JSON of every `data:` line, in order. */
	events: { type: string; [key: string]: unknown }[];
}

/** Posts a body to `/api/stream` and reads the whole answer as text. */
export async function postProxy(url: string, body: unknown, key?: string): Promise<ProxyWire> {
	const res = await fetch(`${url}/api/stream`, {
		method: "POST",
		headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
		body: JSON.stringify(body),
	});
	const text = await res.text();
	const events = text
		.split("\n")
		.filter((line) => line.startsWith("data:"))
		.map((line) => JSON.parse(line.slice("data:".length)));
	return { status: res.status, contentType: res.headers.get("content-type"), text, events };
}

/** A user message for a raw context. */
export function userMessage(text: string) {
	return { role: "user" as const, content: text, timestamp: 1 };
}
