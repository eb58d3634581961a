/**
 * A Chat Completions provider on a real local port that checks each request as OpenAI does before
 * answering (tool and tool-call names, tool parameter schemas, inline images, token and
 * temperature bounds) and answers 400 in OpenAI's shape when one fails. Every refusal is kept: a
 * request the server let through that a real provider refuses is a 502 (or a failed stream) for
 * the server's client. A request it accepts is answered with a short streamed text.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

type Json = Record<string, any>;

/** What OpenAI would refuse in `body`, or undefined. */
export function refusalOf(body: Json): string | undefined {
	for (const [i, tool] of (body.tools ?? []).entries()) {
		const name = tool?.function?.name;
		if (typeof name !== "string" || !TOOL_NAME.test(name))
			return `tools[${i}].function.name: ${JSON.stringify(name)?.slice(0, 80)}`;
		const parameters = tool.function.parameters;
		if (
			parameters !== undefined &&
			(typeof parameters !== "object" || parameters === null || parameters.type !== "object")
		)
			return `tools[${i}].function.parameters: not an object schema`;
	}
	for (const [i, message] of (body.messages ?? []).entries()) {
		for (const [j, call] of (message?.tool_calls ?? []).entries()) {
			if (!TOOL_NAME.test(String(call?.function?.name)))
				return `messages[${i}].tool_calls[${j}].function.name: ${JSON.stringify(call?.function?.name)?.slice(0, 80)}`;
		}
		if (!Array.isArray(message?.content)) continue;
		for (const [j, part] of message.content.entries()) {
			if (part?.type !== "image_url") continue;
			const match = /^data:([^;,]+);base64,(.*)$/s.exec(String(part.image_url?.url));
			if (!match) return `messages[${i}].content[${j}].image_url: not a data URL`;
			const [, mime, data] = match as unknown as [string, string, string];
			if (!mime.startsWith("image/")) return `messages[${i}].content[${j}].image_url: ${mime} is not an image`;
			if (data === "" || data.length % 4 === 1 || !BASE64.test(data))
				return `messages[${i}].content[${j}].image_url: invalid base64`;
		}
	}
	const max = body.max_tokens ?? body.max_completion_tokens;
	if (max !== undefined && (!Number.isInteger(max) || max < 1)) return `max_tokens: ${max}`;
	if (body.temperature !== undefined && !(body.temperature >= 0 && body.temperature <= 2))
		return `temperature: ${body.temperature}`;
	return undefined;
}

const ANSWER = [
	{ id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta: { role: "assistant", content: "ok" } }] },
	{ id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
	{ id: "chatcmpl-1", model: "m", choices: [], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } },
]
	.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
	.join("")
	.concat("data: [DONE]\n\n");

export interface StrictProvider {
	/** The base URL of its OpenAI API (`.../v1`). */
	baseUrl: string;
	/** What it refused, in order. */
	refusals: string[];
	close(): Promise<void>;
}

export async function startStrictProvider(): Promise<StrictProvider> {
	const refusals: string[] = [];
	const server: Server = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => {
			let body: Json = {};
			try {
				body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
			} catch {
				refusals.push("the body is not JSON");
			}
			const refusal = refusalOf(body);
			if (refusal) {
				refusals.push(refusal);
				res.writeHead(400, { "content-type": "application/json" });
				res.end(JSON.stringify({ error: { message: `Invalid request: ${refusal}`, type: "invalid_request_error" } }));
				return;
			}
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.end(ANSWER);
		});
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return {
		baseUrl: `http://127.0.0.1:${port}/v1`,
		refusals,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
