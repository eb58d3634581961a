/**
 * A session's live tail in Redis: the events its running replica published lately, deltas
 * included, in a Redis Stream whose entry ids are the log's ids (`<id>-0`). Pub/sub carries the
 * events live; the tail is what a reader on any replica reads back when it resumes inside a
 * message (the store keeps a streaming message's deltas only on the replica running it) or when
 * it missed live messages.
 *
 * Beside the tail, a small key holds the highest id published (the *high-water mark*). Events are
 * published in id order, each only once durable, so the tail together with the store's log has
 * every published event up to the mark; an event the log has above it may be one whose deltas are
 * not published yet, so a reader takes the log only up to the mark (see `remote-stream.ts`).
 *
 * Memory: the tail is capped (`TAIL_MAX_EVENTS`, trimmed approximately by Redis) and expires
 * `TAIL_TTL_MS` after the session's last published event; the mark expires after
 * `HIGH_WATER_TTL_MS`. Nothing here is needed for durability: without Redis, or once the tail is
 * gone, readers have the store's log (everything but the deltas of a message that finished).
 */
import type { ChainableCommander, Redis } from "ioredis";
import type { StoredEvent } from "../../store/types.js";
import { decodeEventMessage, eventChannel, highWaterKey, tailKey } from "./redis.js";

/** Entries a session's tail keeps (about: Redis trims whole nodes of its stream). */
export const TAIL_MAX_EVENTS = 10_000;
/** A tail is deleted this long after its session's last published event. */
export const TAIL_TTL_MS = 10 * 60_000;
/** The high-water mark outlives the tail: with it a reader knows what the log may be ahead by. */
export const HIGH_WATER_TTL_MS = 24 * 60 * 60_000;

/** The field an entry's event is stored under (the event message of the channel). */
const FIELD = "e";

/**
 * One session's events of a batch, in one script call: each is appended to the tail (an id not
 * above the tail's last, after a takeover, is skipped; so is everything the tail refuses, a full
 * Redis with `noeviction`) and then published on the channel; then the tail's expiry and the
 * high-water mark are set. One call per session and batch instead of
 * two commands per event, and atomic: a reader never sees the mark before the appends it covers.
 *
 * KEYS: tail, mark, channel. ARGV: cap, tail TTL ms, mark TTL ms, then id and message per event.
 */
const PUBLISH_SCRIPT = `
local last = nil
for i = 4, #ARGV, 2 do
  redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], ARGV[i] .. '-0', '${FIELD}', ARGV[i + 1])
  redis.call('PUBLISH', KEYS[3], ARGV[i + 1])
  last = ARGV[i]
end
if last then
  redis.pcall('PEXPIRE', KEYS[1], ARGV[2])
  redis.pcall('SET', KEYS[2], last, 'PX', ARGV[3])
end
return 0
`;

const COMMAND = "wheelhousePublishEvents";

type PublishEvents = (tail: string, mark: string, channel: string, ...args: (string | number)[]) => unknown;

/** Makes the publishing script a command of `redis` (and of its pipelines); call once per connection. */
export function defineTailCommands(redis: Redis): void {
	redis.defineCommand(COMMAND, { numberOfKeys: 3, lua: PUBLISH_SCRIPT });
}

/**
 * Queues on `pipeline` the tail appends, publishes and mark of one session's events of a batch
 * (`ids[i]` with `messages[i]`, in id order; see `PUBLISH_SCRIPT`). The connection had
 * `defineTailCommands`.
 */
export function publishToTail(
	pipeline: ChainableCommander,
	prefix: string,
	sessionId: string,
	ids: number[],
	messages: string[],
): void {
	const args: (string | number)[] = [TAIL_MAX_EVENTS, TAIL_TTL_MS, HIGH_WATER_TTL_MS];
	for (let i = 0; i < ids.length; i++) args.push(ids[i]!, messages[i]!);
	(pipeline as unknown as Record<string, PublishEvents>)[COMMAND]!(
		tailKey(prefix, sessionId),
		highWaterKey(prefix, sessionId),
		eventChannel(prefix, sessionId),
		...args,
	);
}

/** What a read of a tail found after a cursor. */
export interface TailPage {
	/** The tail's events after the cursor, in id order (at most the limit asked). */
	events: StoredEvent[];
	/**
	 * Every event published up to this id is in `events` or was in the log before (the tail was
	 * read in full up to it); above it the log may be ahead of what was published. `Infinity`
	 * when Redis knows nothing of the session (never published, expired, Redis restarted): the
	 * log is all there is.
	 */
	covered: number;
}

/** Reads sessions' tails (on a connection that is not in subscriber mode). */
export class EventTail {
	constructor(
		private readonly redis: Redis,
		private readonly prefix: string,
	) {}

	/**
	 * The tail's events after `afterId`, at most `limit`. Undefined when Redis cannot answer (the
	 * reader has the log alone, as before any tail existed).
	 */
	async read(sessionId: string, afterId: number, limit: number): Promise<TailPage | undefined> {
		// The mark first: every append up to it precedes it, so the range read after it has them.
		const replies = await this.redis
			.pipeline()
			.get(highWaterKey(this.prefix, sessionId))
			.xrange(tailKey(this.prefix, sessionId), `${afterId + 1}-0`, "+", "COUNT", limit)
			.exec()
			.catch(() => null);
		if (!replies || replies.some(([err]) => err)) return undefined;
		const stored = replies[0]![1] === null ? Number.NaN : Number(replies[0]![1]);
		const mark = Number.isSafeInteger(stored) ? stored : undefined;
		const entries = replies[1]![1] as [string, string[]][];
		const events: StoredEvent[] = [];
		for (const [, fields] of entries) {
			const event = fields[0] === FIELD && fields[1] !== undefined ? decodeEventMessage(fields[1]) : undefined;
			if (event && event.id > afterId) events.push({ ...event, createdAt: 0 });
		}
		const last = events.at(-1)?.id;
		if (entries.length >= limit) return { events, covered: last ?? afterId };
		if (mark === undefined && last === undefined) return { events, covered: Number.POSITIVE_INFINITY };
		return { events, covered: Math.max(mark ?? 0, last ?? 0) };
	}
}
