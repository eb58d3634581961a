/**
 * The reference of bench/memory: `@mariozechner/pi-agent-core` behind a bare `node:http` SSE
 * endpoint, with the same stand-in model as Wheelhouse's `faux/echo` (the prompt streamed back one
 * word per text delta, `FAUX_DELAY_MS` apart). Plain JavaScript run by `node` itself, so no
 * TypeScript loader sits in the measured process.
 *
 *   POST /sessions                → 201 {"id"}            a session: one Agent, kept in memory
 *   POST /sessions/:id/prompt     {"message"} → SSE       every AgentEvent as `id`/`event`/`data`;
 *                                                         `message_update` without its partial copies
 *   GET  /healthz                 → 200
 *
 * The same routes answer under `/v1` too (the paths bench/sse's guard client uses). Run as a program,
 * it listens on 127.0.0.1:`PORT`; bench/sse starts it in its server process with `startReferenceServer`.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";
import { Agent } from "@mariozechner/pi-agent-core";
import { createAssistantMessageEventStream, fauxAssistantMessage } from "@mariozechner/pi-ai";

const delayMs = Number(process.env.FAUX_DELAY_MS ?? 0);
const model = {
	id: "echo",
	name: "echo",
	api: "faux-echo",
	provider: "faux",
	baseUrl: "",
	reasoning: false,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 1_000_000,
	maxTokens: 1_000_000,
};

/** Streams the last user message back, one word per text delta (what `faux/echo` does for text). */
function echoStream(streamModel, context, options) {
	const stream = createAssistantMessageEventStream();
	const last = context.messages.at(-1);
	const text =
		typeof last?.content === "string" ? last.content : (last?.content ?? []).map((block) => block.text ?? "").join("");
	const words = text.match(/\s*\S+\s*/g) ?? [text];
	// pi-ai's own empty message (zero usage), stamped with this model.
	const partial = {
		...fauxAssistantMessage([]),
		api: streamModel.api,
		provider: streamModel.provider,
		model: streamModel.id,
	};
	const block = { type: "text", text: "" };
	let next = 0;
	const step = () => {
		if (options?.signal?.aborted) {
			partial.stopReason = "aborted";
			stream.push({ type: "error", reason: "aborted", error: partial });
			return;
		}
		if (next === 0) {
			stream.push({ type: "start", partial });
			partial.content.push(block);
			stream.push({ type: "text_start", contentIndex: 0, partial });
		}
		if (next < words.length) {
			const delta = words[next++];
			block.text += delta;
			stream.push({ type: "text_delta", contentIndex: 0, delta, partial });
			if (delayMs > 0) setTimeout(step, delayMs);
			else setImmediate(step);
			return;
		}
		stream.push({ type: "text_end", contentIndex: 0, content: block.text, partial });
		stream.push({ type: "done", reason: "stop", message: partial });
	};
	setImmediate(step);
	return stream;
}

const sessions = new Map();

function frame(id, event) {
	let data = event;
	if (event.type === "message_update") {
		const { partial: _partial, ...assistantMessageEvent } = event.assistantMessageEvent;
		data = { type: event.type, assistantMessageEvent };
	}
	return `id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

async function readJson(request) {
	let body = "";
	for await (const chunk of request) body += chunk;
	return body ? JSON.parse(body) : {};
}

const server = createServer(async (request, response) => {
	if (request.url?.startsWith("/v1/")) request.url = request.url.slice(3);
	try {
		if (request.method === "GET" && request.url === "/healthz") {
			response.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
			return;
		}
		if (request.method === "POST" && request.url === "/sessions") {
			const id = randomUUID();
			sessions.set(id, { agent: new Agent({ initialState: { model }, streamFn: echoStream }), nextEventId: 1 });
			response.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ id }));
			return;
		}
		const match = /^\/sessions\/([^/]+)\/prompt$/.exec(request.url ?? "");
		const session = match && request.method === "POST" ? sessions.get(match[1]) : undefined;
		if (!session) {
			response.writeHead(404).end();
			return;
		}
		const { message } = await readJson(request);
		response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
		const unsubscribe = session.agent.subscribe((event) => {
			response.write(frame(session.nextEventId++, event));
		});
		await session.agent.prompt(String(message ?? ""));
		unsubscribe();
		response.end();
	} catch (error) {
		if (!response.headersSent) response.writeHead(500);
		response.end(String(error));
	}
});
/** Listens on 127.0.0.1:`port` (0: an ephemeral one) and answers the base URL. */
export function startReferenceServer(port = 0) {
	return new Promise((resolve) => {
		server.listen(port, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}` }));
	});
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
	await startReferenceServer(Number(process.env.PORT ?? 0));
	process.on("SIGTERM", () => server.close(() => process.exit(0)));
}
