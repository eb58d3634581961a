/**
 * A stand-in OpenTelemetry collector for bench/sse `--tracing`, in its own process (forked by
 * index.ts) so that receiving spans costs the server under test nothing but the export itself: it
 * accepts OTLP/HTTP posts on any path, answers 200 with an empty protobuf body, and counts them.
 *
 * IPC: answers `{type:"ready", url}` once listening; `{type:"count"}` → `{type:"count", requests, bytes}`.
 */
import { createServer } from "node:http";

export type ReceiverReply =
	| { type: "ready"; url: string }
	| { type: "count"; requests: number; bytes: number; spanNames: number };

let requests = 0;
let bytes = 0;
/** Requests whose body holds an `invoke_agent` span name: the runs' spans did arrive. */
let spanNames = 0;
const needle = Buffer.from("invoke_agent");

const server = createServer((req, res) => {
	const chunks: Buffer[] = [];
	req.on("data", (chunk: Buffer) => chunks.push(chunk));
	req.on("end", () => {
		const body = Buffer.concat(chunks);
		requests++;
		bytes += body.length;
		if (body.includes(needle)) spanNames++;
		res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
	});
});

server.listen(0, "127.0.0.1", () => {
	const { port } = server.address() as { port: number };
	process.send!({ type: "ready", url: `http://127.0.0.1:${port}` } satisfies ReceiverReply);
});

process.on("message", (message: { type: string }) => {
	if (message.type === "count") process.send!({ type: "count", requests, bytes, spanNames } satisfies ReceiverReply);
});
process.on("disconnect", () => process.exit(0));
