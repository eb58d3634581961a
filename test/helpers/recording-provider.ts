/**
 * A Chat Completions provider on a real local port that records what each model call was given
 * (the model id and the system prompt), so a test can tell which config a run used. It answers a
 * conversation whose last message is a user message starting with `/tool NAME` with one call of
 * NAME (no arguments), and anything else with the text `ok`.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One model call as the provider received it. */
export interface RecordedCall {
	model: string;
	/** The text of the system (or developer) message; "" without one. */
	system: string;
	/** The role of the conversation's last message. */
	lastRole: string;
}

export interface RecordingProvider {
	/** The base URL of its OpenAI API (`.../v1`). */
	baseUrl: string;
	calls: RecordedCall[];
	close(): Promise<void>;
}

type Json = Record<string, any>;

function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content.map((part: Json) => (typeof part?.text === "string" ? part.text : "")).join("");
}

function sse(chunks: Json[]): string {
	return chunks
		.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
		.join("")
		.concat("data: [DONE]\n\n");
}

function answer(model: string, toolName: string | undefined): string {
	const usage = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 };
	const delta = toolName
		? {
				role: "assistant",
				tool_calls: [
					{
						index: 0,
						id: `call_${Math.random().toString(36).slice(2, 10)}`,
						type: "function",
						function: { name: toolName, arguments: "{}" },
					},
				],
			}
		: { role: "assistant", content: "ok" };
	return sse([
		{ id: "chatcmpl-1", model, choices: [{ index: 0, delta }] },
		{ id: "chatcmpl-1", model, choices: [{ index: 0, delta: {}, finish_reason: toolName ? "tool_calls" : "stop" }] },
		{ id: "chatcmpl-1", model, choices: [], usage },
	]);
}

export async function startRecordingProvider(): Promise<RecordingProvider> {
	const calls: RecordedCall[] = [];
	const server: Server = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => {
			let body: Json = {};
			try {
				body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
			} catch {
				// answered as an empty conversation
			}
			const messages: Json[] = Array.isArray(body.messages) ? body.messages : [];
			const system = messages.find((m) => m.role === "system" || m.role === "developer");
			const last = messages.at(-1);
			const model = String(body.model ?? "");
			calls.push({ model, system: textOf(system?.content), lastRole: String(last?.role ?? "") });
			const tool = last?.role === "user" ? /^\/tool (\S+)/.exec(textOf(last.content))?.[1] : undefined;
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.end(answer(model, tool));
		});
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return {
		baseUrl: `http://127.0.0.1:${port}/v1`,
		calls,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
