/**
 * The bare baseline bench/sse's guard measures Wheelhouse against: a Fastify server with the same
 * two routes a client uses — `POST /v1/sessions` (answers an id) and `POST /v1/sessions/:id/prompt`
 * (streams an answer) — writing the frames the real server sent for that prompt, byte for byte,
 * one write per event, with no agent loop, no store and no event log. What Fastify and the socket
 * cost; everything above it is Wheelhouse's.
 */
import { once } from "node:events";
import Fastify from "fastify";

/**
 * Starts the baseline on an ephemeral port. `streams` maps a prompt message to the frames of its
 * recorded answer; any other message gets 404.
 */
export async function startFastifyBaseline(streams: Map<string, string[]>): Promise<{ url: string }> {
	const app = Fastify({ logger: false });
	let next = 0;
	app.post("/v1/sessions", async (_request, reply) => reply.code(201).send({ id: `s${++next}` }));
	app.post<{ Params: { id: string }; Body: { message?: string } }>(
		"/v1/sessions/:id/prompt",
		async (request, reply) => {
			const frames = streams.get(request.body?.message ?? "");
			if (!frames) return reply.code(404).send({ error: "no recorded answer for this message" });
			reply.hijack();
			const res = reply.raw;
			res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
			for (const frame of frames) if (!res.write(frame)) await once(res, "drain");
			res.end();
		},
	);
	await app.listen({ port: 0, host: "127.0.0.1" });
	const address = app.server.address() as { port: number };
	return { url: `http://127.0.0.1:${address.port}` };
}
