/**
 * The limit bench/sse measures against: a bare node:http SSE writer that replays recorded
 * Wheelhouse streams byte for byte, one `write()` per event (DESIGN.md's "raw node:http SSE
 * writer"), waiting for `drain` only when the socket asks for it.
 *
 * `GET /raw/<name>` replays the frames registered under `name`.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Splits an SSE body into its frames (each keeps its blank-line terminator). */
export function splitFrames(body: string): string[] {
	const frames: string[] = [];
	let from = 0;
	for (;;) {
		const end = body.indexOf("\n\n", from);
		if (end < 0) break;
		frames.push(body.slice(from, end + 2));
		from = end + 2;
	}
	return frames;
}

export async function startRawServer(streams: Map<string, string[]>): Promise<{ server: Server; url: string }> {
	const server = createServer(async (req, res) => {
		const frames = streams.get(decodeURIComponent((req.url ?? "").replace(/^\/raw\//, "")));
		if (!frames) {
			res.writeHead(404).end();
			return;
		}
		res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
		for (const frame of frames) {
			if (!res.write(frame)) await once(res, "drain");
		}
		res.end();
	});
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
