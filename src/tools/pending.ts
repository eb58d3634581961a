/**
 * Per-session registry of tool calls waiting for a client: an approval decision, the result of
 * a client-side tool, or the answer to an MCP server's elicitation (a question an MCP server asks
 * during one of its tool calls; keyed by its own elicitation id, not the tool call's). Independent of HTTP: the server resolves entries from its routes, lists them
 * in session state and re-announces them to new subscribers.
 *
 * Each wait ends exactly once: resolved by the client, timed out, or aborted (the run's signal).
 * Entries are keyed by `(kind, toolCallId)`: a client-side tool that also needs approval waits
 * twice, first for the approval, then for the result.
 */
import type { ImageContent, TextContent } from "../ai/types.js";

export type PendingKind = "approval" | "client_tool" | "elicitation";

/** What a tool call waits for; this is what session state lists and `approval_requested` carries. */
export interface PendingRequest {
	kind: PendingKind;
	toolCallId: string;
	toolName: string;
	args: unknown;
	/** Epoch ms. */
	createdAt: number;
	/** Epoch ms at which the wait times out. */
	expiresAt: number;
	/**
	 * Loaded from the store after a restart: the run that waited is gone, so it can only be
	 * listed (answering it gets `finished`).
	 */
	orphaned?: boolean;
}

/** The client's answer to an approval request. */
export interface ApprovalDecision {
	approve: boolean;
	reason?: string;
}

/** The client's result of a client-side tool call. */
export interface ClientToolResult {
	content: string | (TextContent | ImageContent)[];
	isError?: boolean;
	details?: unknown;
}

/** The client's answer to an MCP server's elicitation (MCP `ElicitResult`). */
export interface ElicitationAnswer {
	action: "accept" | "decline" | "cancel";
	/** With `accept`: the values of the requested schema's fields. */
	content?: Record<string, string | number | boolean | string[]>;
}

export type PendingValue<K extends PendingKind> = K extends "approval"
	? ApprovalDecision
	: K extends "elicitation"
		? ElicitationAnswer
		: ClientToolResult;

export type WaitOutcome<T> =
	| { kind: "resolved"; value: T }
	| { kind: "timeout"; timeoutMs: number }
	| { kind: "aborted"; reason: unknown };

/**
 * `resolved`: delivered to the waiting tool call. `unknown`: no such call is or was waiting (404).
 * `finished`: the call was waiting but has ended (answered, timed out, aborted, or orphaned by a
 * restart) (409). `interrupted`: the call was waiting when the server process died; startup
 * recovery ended the wait (409).
 */
export type ResolveOutcome = "resolved" | "unknown" | "finished" | "interrupted";

/** The `resolution` startup recovery stores for an interaction whose run died with the process. */
export const INTERRUPTED_RESOLUTION = JSON.stringify({ kind: "interrupted" });

/** A pending interaction as the store keeps it (`PendingInteraction` in src/store/types.ts). */
export interface StoredPending {
	toolCallId: string;
	kind: PendingKind;
	payload: string;
	createdAt: number;
	resolvedAt: number | null;
	resolution: string | null;
}

/**
 * The subset of the session store (`PendingInteractionStore` in src/store/types.ts) used to persist
 * pending interactions; structural, so tools/ does not import store/. Its writes take effect in the
 * order they are called, awaited or not, and the server's commit barrier waits for them.
 */
export interface PendingPersistence {
	putPending(interaction: {
		sessionId: string;
		toolCallId: string;
		kind: PendingKind;
		payload: string;
		createdAt: number;
	}): Promise<boolean>;
	resolvePending(sessionId: string, toolCallId: string, resolution: string, at: number): Promise<boolean>;
	deletePending(sessionId: string, toolCallId: string): Promise<boolean>;
	listPending(sessionId: string, options?: { includeResolved?: boolean }): Promise<StoredPending[]>;
}

export interface PendingInteractionsOptions {
	store?: PendingPersistence;
	now?: () => number;
	/** Called after every change of the pending list (added, resolved, timed out, aborted). Must not throw. */
	onChange?: (pending: PendingRequest[]) => void;
	/** Called when a store write fails (the wait goes on regardless). Must not throw. */
	onPersistError?: (error: unknown) => void;
	/** How many ended calls to remember for the 409 answer. Default 1000. */
	finishedMemory?: number;
}

interface Waiter {
	request: PendingRequest;
	settle: (outcome: WaitOutcome<any>) => void;
}

/** `450 ms`, `30 s`, `5 min`: for messages the model and the user read. */
export function formatDuration(ms: number): string {
	if (ms < 1000) return `${ms} ms`;
	// Exact, never rounded: a 1,500 ms timeout is "1.5 s", not "2 s".
	if (ms >= 120_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
	return `${ms / 1000} s`;
}

const keyOf = (kind: PendingKind, toolCallId: string) => `${kind}:${toolCallId}`;

export class PendingInteractions {
	private readonly waiters = new Map<string, Waiter>();
	private readonly orphans = new Map<string, PendingRequest>();
	private readonly finished = new Set<string>();
	/** Waits that a restart ended (startup recovery), so their 409 can say so. */
	private readonly interrupted = new Set<string>();
	private interruptedStored = true;
	private readonly now: () => number;

	/** The registry of a session, with what the store holds for it (a previous process's waits). */
	static async load(sessionId: string, options: PendingInteractionsOptions = {}): Promise<PendingInteractions> {
		const pending = new PendingInteractions(sessionId, options);
		pending.adopt((await options.store?.listPending(sessionId, { includeResolved: true })) ?? []);
		return pending;
	}

	constructor(
		readonly sessionId: string,
		private readonly options: PendingInteractionsOptions = {},
	) {
		this.now = options.now ?? Date.now;
	}

	/**
	 * Takes in what the store holds for the session (`listPending` with `includeResolved`): a
	 * previous process's unresolved waits become orphans, and the waits startup recovery ended
	 * answer `interrupted`. Waits of this process are left as they are. Taken in again, it replaces
	 * the orphans (a wait of another replica that ended since is no longer shown).
	 */
	adopt(stored: readonly StoredPending[]): void {
		this.orphans.clear();
		for (const record of stored) {
			const key = keyOf(record.kind, record.toolCallId);
			if (this.waiters.has(key)) continue;
			if (record.resolution === INTERRUPTED_RESOLUTION) {
				this.interrupted.add(key);
				continue;
			}
			if (record.resolvedAt !== null) continue;
			this.orphans.set(key, storedRequest(record, true));
		}
	}

	/**
	 * Waits for the client. Resolves (never rejects) with the answer, a timeout, or an abort.
	 * Throws only on misuse: the same `(kind, toolCallId)` already waiting.
	 */
	wait<K extends PendingKind>(request: {
		kind: K;
		toolCallId: string;
		toolName: string;
		args: unknown;
		timeoutMs: number;
		signal?: AbortSignal;
	}): Promise<WaitOutcome<PendingValue<K>>> {
		const key = keyOf(request.kind, request.toolCallId);
		if (this.waiters.has(key)) {
			throw new Error(
				`${request.kind} for tool call ${request.toolCallId} is already pending; tool call ids must be unique`,
			);
		}
		const createdAt = this.now();
		const entry: PendingRequest = {
			kind: request.kind,
			toolCallId: request.toolCallId,
			toolName: request.toolName,
			args: request.args,
			createdAt,
			expiresAt: createdAt + request.timeoutMs,
		};
		if (request.signal?.aborted) return Promise.resolve({ kind: "aborted", reason: request.signal.reason });

		return new Promise((resolve) => {
			const onAbort = () => settle({ kind: "aborted", reason: request.signal?.reason });
			const timer = setTimeout(() => settle({ kind: "timeout", timeoutMs: request.timeoutMs }), request.timeoutMs);
			const settle = (outcome: WaitOutcome<any>) => {
				if (this.waiters.get(key)?.settle !== settle) return;
				clearTimeout(timer);
				request.signal?.removeEventListener("abort", onAbort);
				this.waiters.delete(key);
				this.remember(key);
				this.persist((store) => store.deletePending(this.sessionId, request.toolCallId));
				this.changed();
				resolve(outcome);
			};
			this.waiters.set(key, { request: entry, settle });
			request.signal?.addEventListener("abort", onAbort, { once: true });
			this.orphans.delete(key);
			this.persist((store) =>
				store.putPending({
					sessionId: this.sessionId,
					toolCallId: request.toolCallId,
					kind: request.kind,
					payload: JSON.stringify({ toolName: request.toolName, args: request.args, expiresAt: entry.expiresAt }),
					createdAt,
				}),
			);
			this.changed();
		});
	}

	/** Delivers the client's answer to the waiting call. */
	resolve<K extends PendingKind>(kind: K, toolCallId: string, value: PendingValue<K>): ResolveOutcome {
		const key = keyOf(kind, toolCallId);
		const waiter = this.waiters.get(key);
		if (!waiter) {
			if (this.interrupted.has(key)) return "interrupted";
			return this.finished.has(key) || this.orphans.has(key) ? "finished" : "unknown";
		}
		this.persist((store) => store.resolvePending(this.sessionId, toolCallId, JSON.stringify(value), this.now()));
		waiter.settle({ kind: "resolved", value });
		return "resolved";
	}

	/** The pending requests, oldest first (orphans from before a restart included, marked). */
	list(kind?: PendingKind): PendingRequest[] {
		const all = [...this.orphans.values(), ...[...this.waiters.values()].map((w) => w.request)];
		return all.filter((r) => !kind || r.kind === kind).sort((a, b) => a.createdAt - b.createdAt);
	}

	get(kind: PendingKind, toolCallId: string): PendingRequest | undefined {
		const key = keyOf(kind, toolCallId);
		return this.waiters.get(key)?.request ?? this.orphans.get(key);
	}

	/** Ends every live wait as aborted (session deleted). Orphans stay listed. */
	abortAll(reason: unknown = new Error("session closed")): void {
		for (const waiter of [...this.waiters.values()]) waiter.settle({ kind: "aborted", reason });
	}

	/**
	 * Forgets the orphans of a previous process and deletes them, and the waits a restart ended,
	 * from the store (those still answer `interrupted` while this process lives).
	 */
	clearOrphaned(): number {
		if (this.interruptedStored) {
			this.interruptedStored = false;
			for (const key of this.interrupted) {
				this.persist((store) => store.deletePending(this.sessionId, key.slice(key.indexOf(":") + 1)));
			}
		}
		const count = this.orphans.size;
		for (const [key, orphan] of this.orphans) {
			this.persist((store) => store.deletePending(this.sessionId, orphan.toolCallId));
			this.remember(key);
		}
		this.orphans.clear();
		if (count) this.changed();
		return count;
	}

	/**
	 * Persistence is best effort and not awaited: the live wait is the source of truth, and a store
	 * failure (e.g. closed during shutdown) must not break a tool call or an abort listener. The
	 * server's commit barrier waits for these writes before anything announcing them leaves the process.
	 */
	private persist(write: (store: PendingPersistence) => Promise<unknown>): void {
		const store = this.options.store;
		if (!store) return;
		try {
			write(store).catch((error: unknown) => this.options.onPersistError?.(error));
		} catch (error) {
			this.options.onPersistError?.(error);
		}
	}

	private remember(key: string): void {
		this.finished.add(key);
		const max = this.options.finishedMemory ?? 1000;
		if (this.finished.size > max) this.finished.delete(this.finished.values().next().value!);
	}

	private changed(): void {
		this.options.onChange?.(this.list());
	}
}

/** The request a stored wait describes; `orphaned` when the process that waited is gone. */
export function storedRequest(record: StoredPending, orphaned: boolean): PendingRequest {
	const payload = safeParse(record.payload);
	return {
		kind: record.kind,
		toolCallId: record.toolCallId,
		toolName: typeof payload.toolName === "string" ? payload.toolName : "",
		args: payload.args,
		createdAt: record.createdAt,
		expiresAt: typeof payload.expiresAt === "number" ? payload.expiresAt : record.createdAt,
		...(orphaned ? { orphaned: true } : {}),
	};
}

function safeParse(payload: string): Record<string, any> {
	try {
		const value = JSON.parse(payload);
		return value && typeof value === "object" ? value : {};
	} catch {
		return {};
	}
}
