/**
 * The session port streams to any {@link StreamSink}, not only an SSE response: the runtime's
 * contract with the stream it writes (session/stream-sink.ts). A sink that records what it is
 * handed gets a run's events in order and its end; a stream the runtime does not begin (a refused
 * run) is never opened, which is what lets a route still answer a refusal as JSON.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AgentMessage } from "../../../src/agent/types.js";
import type { OpenStreamSink, StreamSink } from "../../../src/server/runtime/session/stream-sink.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
afterEach(async () => {
	await server?.close();
	server = undefined;
});

/** A sink that keeps every frame it is handed, with an opener that counts its calls. */
function recordingSink() {
	const frames: { frame: string; id: number | undefined }[] = [];
	let closed = false;
	let endedWith: string | undefined;
	let onClose: (() => void) | undefined;
	let opened = 0;
	let ended!: () => void;
	const end = new Promise<void>((resolve) => {
		ended = resolve;
	});
	const sink: StreamSink = {
		send(frame, id) {
			if (!closed) frames.push({ frame, id });
		},
		end(finalChunk = "") {
			if (closed) return;
			closed = true;
			endedWith = finalChunk;
			onClose?.();
			ended();
		},
		abandon(finalChunk) {
			this.end(finalChunk);
		},
		get isClosed() {
			return closed;
		},
		get lastSentId() {
			return frames.at(-1)?.id;
		},
		bufferedBytes: 0,
		maxBufferBytes: 1 << 20,
		whenWritable: () => Promise.resolve(),
	};
	const open: OpenStreamSink = (close) => {
		opened++;
		onClose = close;
		return sink;
	};
	return {
		open,
		frames,
		end,
		get opened() {
			return opened;
		},
		get endedWith() {
			return endedWith;
		},
		types: () => frames.map((f) => /^event: (\S+)$/m.exec(f.frame)?.[1]),
	};
}

const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: Date.now() });

describe("the session port's streams write to a StreamSink", () => {
	it("a run's stream: opened once the run exists, its events in id order from agent_start to agent_end, then ended", async () => {
		server = await startServer();
		const created = await server.request("POST", "/v1/sessions", { body: {} });
		const port = await server.app.wheelhouse.sessions.open(created.body.id, null);

		// Refused before a run exists (nothing to continue): the stream is never opened.
		const refused = recordingSink();
		await expect(port.continue({ stream: refused.open })).rejects.toMatchObject({ code: "NOTHING_TO_CONTINUE" });
		expect(refused.opened).toBe(0);

		const sink = recordingSink();
		const outcome = await port.prompt([user("one two three")], "reject", { stream: sink.open });
		expect(outcome.kind).toBe("started");
		await sink.end;
		expect(sink.opened).toBe(1);
		const types = sink.types();
		expect(types[0]).toBe("agent_start");
		expect(types.at(-1)).toBe("agent_end");
		const ids = sink.frames.map((f) => f.id!);
		for (let i = 1; i < ids.length; i++) expect(ids[i]).toBe(ids[i - 1]! + 1);
		expect(sink.endedWith).toBe("");
		const view = await port.view();
		expect(view.lastEventId).toBe(ids.at(-1));
	});

	it("the session's stream: a snapshot without a cursor; after one, the log's events after it", async () => {
		server = await startServer();
		const created = await server.request("POST", "/v1/sessions", { body: {} });
		const id = created.body.id as string;
		const port = await server.app.wheelhouse.sessions.open(id, null);
		const run = recordingSink();
		await port.prompt([user("hello")], "reject", { stream: run.open });
		await run.end;

		const live = recordingSink();
		await port.streamEvents(live.open, undefined);
		expect(live.types()).toEqual(["session_snapshot"]);

		const resumed = recordingSink();
		const after = run.frames[1]!.id!;
		await port.streamEvents(resumed.open, after);
		await expect.poll(() => resumed.frames.length).toBe(run.frames.length - 2);
		expect(resumed.frames.map((f) => f.id)).toEqual(run.frames.slice(2).map((f) => f.id));

		// The session going away ends its streams, saying why.
		await server.request("DELETE", `/v1/sessions/${id}`);
		await live.end;
		expect(live.endedWith).toMatch(/^: closing: /);
	});
});
