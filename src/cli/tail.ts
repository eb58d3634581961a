/**
 * `wheelhouse tail <session>`: a session's event stream, one line per event (or JSON lines), that
 * reconnects with `Last-Event-ID` after a disconnect or a server restart, so no event is shown
 * twice or missed while the server keeps it.
 */
import type { WheelhouseClient } from "../client/index.js";
import { UsageError } from "./options.js";
import { eventLine, type Style } from "./render.js";
import type { Io } from "./run.js";

export interface TailFlags {
	json?: boolean;
	/** Start after this event id (replays the retained events after it). */
	after?: string;
	/** Stop after the run's `agent_end`. */
	once?: boolean;
}

/** Streams until Ctrl-C (or the end of a run with `--once`); resolves with the exit code. */
export async function tailCommand(
	client: WheelhouseClient,
	sessionId: string | undefined,
	flags: TailFlags,
	io: Io,
	s: Style,
): Promise<number> {
	if (!sessionId) throw new UsageError("tail: give the session id, e.g. wheelhouse tail 4f1c…");
	const after = flags.after === undefined ? undefined : Number(flags.after);
	if (after !== undefined && !(Number.isSafeInteger(after) && after >= 0)) {
		throw new UsageError(`--after: not an event id (a whole number ≥ 0): ${flags.after}`);
	}
	const stop = new AbortController();
	const onSigint = () => stop.abort();
	process.once("SIGINT", onSigint);
	try {
		const events = client.events(sessionId, {
			lastEventId: after,
			signal: stop.signal,
			maxRetries: 60,
			retryDelayMs: 500,
			until: flags.once ? (event) => event.type === "agent_end" : undefined,
			onReconnect: ({ attempt, lastEventId }) => {
				if (!flags.json) io.stderr.write(s.dim(`reconnecting after #${lastEventId ?? "-"} (attempt ${attempt})…\n`));
			},
		});
		for await (const event of events) {
			if (flags.json) io.stdout.write(`${JSON.stringify({ id: event.id, type: event.type, data: event.data })}\n`);
			else {
				const line = eventLine(event, s);
				if (line) io.stdout.write(`${line}\n`);
			}
		}
	} finally {
		process.off("SIGINT", onSigint);
	}
	return 0;
}
