/**
 * One configured MCP server: connects over stdio or Streamable HTTP, keeps its tool list, and
 * reconnects with exponential backoff after a crash or disconnect.
 *
 * States: `connecting` (first attempt or waiting to retry) → `connected` → back to `connecting`
 * when the transport closes (stdio process exit), a call fails at the transport level (HTTP), or a
 * ping fails; `failed` once `reconnect.maxAttempts` is exhausted; `stopped` after `stop()`.
 * While not connected, calls fail fast with a message naming the server and the retry attempt.
 *
 * Tools that must run as MCP tasks (`execution.taskSupport: "required"`, spec 2025-11) are left
 * out of the tool list — a plain call of one always fails — and listed in `skippedTools`.
 *
 * Streamable HTTP: a server that was restarted or redeployed answers the old session id with 404
 * (the spec's "session not found": the request was not run). The call then re-initialises the
 * connection and is sent once more, instead of failing.
 *
 * Elicitation (elicitation.ts): the client declares the capability (form mode); a request is tied
 * to the one call in flight and handed to `options.elicit`, and that call's timeout does not run
 * while a human answers (it starts afresh with the answer). With no call, or several, in flight
 * it cannot be tied to one, and is answered `cancel`.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult, Tool as McpTool, Progress } from "@modelcontextprotocol/sdk/types.js";
import type { ElicitationSchema, McpElicitationResult } from "./elicitation.js";

/** The SDK's runtime parts (sdk.ts), imported on the first connect. */
type McpSdk = typeof import("./sdk.js");

export type McpServerState = "connecting" | "connected" | "failed" | "stopped";

/** What `GET /v1/tools` and logs show about one server. */
export interface McpServerStatus {
	name: string;
	transport: "stdio" | "http";
	state: McpServerState;
	/** Reconnect attempt in progress or scheduled (0 while connected). */
	attempt: number;
	lastError?: string;
	toolCount: number;
	/** Epoch ms of the last successful connect. */
	connectedAt?: number;
	/** `name` and `version` the server reported at its last connect. */
	serverInfo?: { name: string; version: string };
	/** Tools of its list that are not offered to models, and why (absent when none). */
	skippedTools?: SkippedMcpTool[];
}

/** A tool a server lists that sessions are not given. */
export interface SkippedMcpTool {
	/** The tool's name on the MCP server. */
	name: string;
	reason: string;
}

/** Where a connection reports what an operator should know (pino's `warn(object, message)` shape). */
export interface McpLogger {
	warn(details: Record<string, unknown>, message: string): void;
}

/** A config entry with `${ENV}` already substituted (see `McpManager`). */
export type ResolvedMcpServer =
	| { transport: "stdio"; command: string; args: string[]; env: Record<string, string>; cwd?: string }
	| { transport: "http"; url: URL; headers: Record<string, string> };

export interface McpConnectionOptions {
	timeoutMs: number;
	connectTimeoutMs: number;
	pingIntervalMs: number;
	reconnect: { initialDelayMs: number; maxDelayMs: number; maxAttempts: number };
	includeTools?: string[];
	clientInfo: { name: string; version: string };
	/** Called after every state or tool-list change. Contract: must not throw. */
	onChange: () => void;
	/** Told when the set of skipped tools changes (not again on a reconnect that lists the same). */
	logger?: McpLogger;
	/**
	 * Answers an elicitation the server sent during `call` (the one call in flight); absent: every
	 * elicitation is answered `cancel`. `signal` is aborted when the call ends or the server
	 * withdraws the request. Contract: never rejects.
	 */
	elicit?: (
		request: { message: string; requestedSchema: ElicitationSchema },
		call: { tool: string; toolCallId: string },
		signal: AbortSignal,
	) => Promise<McpElicitationResult>;
}

/** A `tools/call` in flight, for tying an elicitation to it. */
interface InFlightCall {
	tool: string;
	toolCallId?: string;
	/** Aborted when the caller aborts or the call ends. */
	signal: AbortSignal;
	/** Stops the call's timeout; the returned function starts it afresh. */
	pause(): () => void;
}

/** Node's largest timer delay: the SDK's own timeout is left this far off, and the call's own timer (paused during an elicitation) applies. */
const NO_SDK_TIMEOUT = 2_147_483_647;

const TASK_REQUIRED_REASON =
	'requires task-based execution (execution.taskSupport "required"), which is not supported yet';

const STDERR_TAIL = 2000;

/**
 * True for the Streamable HTTP answer to a request on a session the server does not know (404,
 * sent when the server restarted or the session expired): per the spec the request was not
 * processed, and the client must start a new session.
 */
function isSessionUnknown(sdk: McpSdk, error: unknown, client: Client): boolean {
	const transport = client.transport;
	return (
		error instanceof sdk.StreamableHTTPError &&
		error.code === 404 &&
		transport instanceof sdk.StreamableHTTPClientTransport &&
		transport.sessionId !== undefined
	);
}

function messageOf(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

export class McpServerConnection {
	private state: McpServerState = "connecting";
	private attempt = 0;
	private lastError?: string;
	private connectedAt?: number;
	private serverInfo?: { name: string; version: string };
	private client?: Client;
	/** Set by the first connect; every path that has a client has it. */
	private sdk?: McpSdk;
	private remoteTools: McpTool[] = [];
	private skippedTools: SkippedMcpTool[] = [];
	/** The skipped names last reported, so a reconnect that lists the same tools logs nothing. */
	private reportedSkips = "";
	/** A re-initialisation in progress after the server forgot our session (shared by the calls that saw it). */
	private reinitialising?: { generation: number; done: Promise<void> };
	private retryTimer?: NodeJS.Timeout;
	private pingTimer?: NodeJS.Timeout;
	private stderrTail = "";
	/** Bumped per connect attempt; events of an older client are ignored. */
	private generation = 0;
	/** The calls in flight now (an elicitation is tied to the one call, or refused). */
	private readonly inFlight = new Set<InFlightCall>();

	constructor(
		readonly name: string,
		private readonly server: ResolvedMcpServer,
		private readonly options: McpConnectionOptions,
	) {}

	status(): McpServerStatus {
		return {
			name: this.name,
			transport: this.server.transport,
			state: this.state,
			attempt: this.attempt,
			...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
			toolCount: this.remoteTools.length,
			...(this.connectedAt !== undefined ? { connectedAt: this.connectedAt } : {}),
			...(this.serverInfo ? { serverInfo: this.serverInfo } : {}),
			...(this.skippedTools.length > 0 ? { skippedTools: this.skippedTools } : {}),
		};
	}

	/** The remote tools of the last successful listing (kept while reconnecting, so calls get a clear error). */
	tools(): McpTool[] {
		return this.remoteTools;
	}

	/** Makes the first connect attempt; a failure schedules retries. Never rejects. */
	async start(): Promise<void> {
		if (this.state === "stopped") return;
		await this.connect();
	}

	/** Closes the connection (and the child process) and cancels retries. Idempotent. */
	async stop(): Promise<void> {
		this.state = "stopped";
		this.generation++;
		clearTimeout(this.retryTimer);
		clearInterval(this.pingTimer);
		const client = this.client;
		this.client = undefined;
		// Streamable HTTP: end the server-side session (DELETE), as the spec asks, but never wait long for it.
		const transport = client?.transport;
		if (this.sdk && transport instanceof this.sdk.StreamableHTTPClientTransport) {
			await Promise.race([transport.terminateSession().catch(() => {}), sleep(2000, undefined, { ref: false })]);
		}
		await client?.close().catch(() => {});
		this.options.onChange();
	}

	/**
	 * Calls a remote tool. Throws when the server is not connected (naming the retry attempt), on
	 * transport failures, timeouts and protocol errors; returns `isError` results as they are.
	 * A call the server refused because it no longer knows the session is re-sent once on a fresh
	 * session (it never ran).
	 */
	async callTool(
		tool: string,
		args: Record<string, unknown>,
		signal?: AbortSignal,
		onProgress?: (progress: Progress) => void,
		toolCallId?: string,
	): Promise<CallToolResult> {
		const first = await this.callOnce(tool, args, signal, onProgress, toolCallId);
		if (first.kind === "result") return first.result;
		await this.reinitialise(first.generation);
		const second = await this.callOnce(tool, args, signal, onProgress, toolCallId);
		if (second.kind === "result") return second.result;
		// Refused on the session it just created too (e.g. replicas behind a balancer without sticky sessions).
		this.handleDisconnect(second.generation, `call to ${tool} failed: HTTP 404, session not found`);
		throw new Error(`MCP server ${this.name} does not know the session it just created (HTTP 404); reconnecting`);
	}

	/**
	 * One `tools/call`. A 404 on a session the server no longer knows comes back as
	 * `session_unknown` (the call did not run); every other failure throws.
	 */
	private async callOnce(
		tool: string,
		args: Record<string, unknown>,
		signal: AbortSignal | undefined,
		onProgress: ((progress: Progress) => void) | undefined,
		toolCallId: string | undefined,
	): Promise<{ kind: "result"; result: CallToolResult } | { kind: "session_unknown"; generation: number }> {
		const client = this.client;
		const sdk = this.sdk;
		if (this.state !== "connected" || !client || !sdk) throw new Error(this.unavailableMessage());
		const { ErrorCode, McpError } = sdk;
		const generation = this.generation;
		// The call's timeout, restarted by each progress notification and paused while an elicitation waits.
		const timeoutMs = this.options.timeoutMs;
		const timedOut = new AbortController();
		const ended = new AbortController();
		let timer: NodeJS.Timeout | undefined;
		let paused = 0;
		const arm = () => {
			clearTimeout(timer);
			if (paused > 0) return;
			timer = setTimeout(
				() => timedOut.abort(new McpError(ErrorCode.RequestTimeout, "Request timed out", { timeout: timeoutMs })),
				timeoutMs,
			);
		};
		const call: InFlightCall = {
			tool,
			...(toolCallId !== undefined ? { toolCallId } : {}),
			signal: signal ? AbortSignal.any([signal, ended.signal]) : ended.signal,
			pause: () => {
				paused++;
				clearTimeout(timer);
				let resumed = false;
				return () => {
					if (resumed) return;
					resumed = true;
					paused--;
					if (!ended.signal.aborted) arm();
				};
			},
		};
		this.inFlight.add(call);
		arm();
		try {
			const result = await client.callTool({ name: tool, arguments: args }, sdk.CallToolResultSchema, {
				signal: signal ? AbortSignal.any([signal, timedOut.signal]) : timedOut.signal,
				timeout: NO_SDK_TIMEOUT,
				...(onProgress
					? {
							onprogress: (progress: Progress) => {
								arm();
								onProgress(progress);
							},
						}
					: {}),
			});
			return { kind: "result", result: result as CallToolResult };
		} catch (error) {
			if (signal?.aborted) throw error;
			// A call in flight on the session when another call's 404 closed it: that session is gone, so it did not run either.
			const closedForReinit =
				this.reinitialising?.generation === generation &&
				error instanceof McpError &&
				error.code === ErrorCode.ConnectionClosed;
			if (closedForReinit || isSessionUnknown(sdk, error, client)) return { kind: "session_unknown", generation };
			if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
				throw new Error(`MCP server ${this.name} disconnected during the call to ${tool}; reconnecting`);
			}
			if (!(error instanceof McpError)) {
				// A transport failure (HTTP: connection refused, unknown session after a server restart).
				this.handleDisconnect(generation, `call to ${tool} failed: ${messageOf(error)}`);
				throw new Error(`MCP server ${this.name} is unreachable (${messageOf(error)}); reconnecting`);
			}
			throw new Error(`MCP tool ${this.name}__${tool} failed: ${error.message}`);
		} finally {
			clearTimeout(timer);
			ended.abort();
			this.inFlight.delete(call);
		}
	}

	/**
	 * Answers an `elicitation/create` of the server: handed to `options.elicit` when exactly one
	 * call of a known tool call is in flight (its timeout paused meanwhile), else `cancel`.
	 */
	private async answerElicitation(
		params: { message: string; requestedSchema?: unknown; mode?: string },
		signal: AbortSignal,
	): Promise<McpElicitationResult> {
		const calls = [...this.inFlight];
		const call = calls.length === 1 ? calls[0] : undefined;
		const elicit = this.options.elicit;
		if (!elicit || !call?.toolCallId || params.mode === "url" || !params.requestedSchema) {
			if (calls.length > 1) {
				this.options.logger?.warn(
					{ mcpServer: this.name, calls: calls.map((c) => c.tool) },
					`MCP server ${this.name} asked for input while ${calls.length} of its calls were in flight; MCP does not say which call asks, so the request was answered "cancel"`,
				);
			}
			return { action: "cancel" };
		}
		const resume = call.pause();
		try {
			return await elicit(
				{ message: params.message, requestedSchema: params.requestedSchema as ElicitationSchema },
				{ tool: call.tool, toolCallId: call.toolCallId },
				AbortSignal.any([signal, call.signal]),
			);
		} catch {
			return { action: "cancel" };
		} finally {
			resume();
		}
	}

	/**
	 * Replaces the connection of `generation` by a fresh one (new `initialize`, new session) and
	 * waits for it; concurrent callers that saw the same stale session share one attempt. A failed
	 * attempt leaves the connection reconnecting with backoff, as after any disconnect.
	 */
	private reinitialise(generation: number): Promise<void> {
		if (this.reinitialising?.generation === generation) return this.reinitialising.done;
		if (generation !== this.generation || this.state !== "connected") return Promise.resolve();
		clearInterval(this.pingTimer);
		const stale = this.client;
		// connect() moves to a new generation before its first await, so the stale client's close is ignored.
		const done = this.connect();
		void stale?.close().catch(() => {});
		this.reinitialising = { generation, done };
		return done;
	}

	private unavailableMessage(): string {
		const last = this.lastError ? ` (last error: ${this.lastError})` : "";
		switch (this.state) {
			case "failed":
				return `MCP server ${this.name} is unavailable: gave up reconnecting after ${this.attempt - 1} attempts${last}`;
			case "stopped":
				return `MCP server ${this.name} is stopped`;
			default:
				return `MCP server ${this.name} is disconnected; reconnecting (attempt ${Math.max(this.attempt, 1)})${last}`;
		}
	}

	private createTransport(sdk: McpSdk): Transport {
		if (this.server.transport === "http") {
			return new sdk.StreamableHTTPClientTransport(this.server.url, { requestInit: { headers: this.server.headers } });
		}
		const transport = new sdk.StdioClientTransport({
			command: this.server.command,
			args: this.server.args,
			// A minimal inherited environment (PATH, HOME, ...) plus the configured entries: the
			// server's own secrets (provider keys) are not handed to every MCP server.
			env: { ...sdk.getDefaultEnvironment(), ...this.server.env },
			...(this.server.cwd ? { cwd: this.server.cwd } : {}),
			stderr: "pipe",
		});
		this.stderrTail = "";
		transport.stderr?.on("data", (chunk: Buffer) => {
			this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL);
		});
		return transport;
	}

	private async connect(): Promise<void> {
		const generation = ++this.generation;
		this.state = "connecting";
		this.client = undefined;
		let client: Client | undefined;
		try {
			this.sdk ??= await import("./sdk.js");
			if (generation !== this.generation) return;
			const sdk = this.sdk;
			client = new sdk.Client(this.options.clientInfo, { capabilities: { elicitation: { form: {} } } });
			client.setRequestHandler(
				sdk.ElicitRequestSchema,
				async (request, extra) =>
					(await this.answerElicitation(
						request.params as { message: string; requestedSchema?: unknown; mode?: string },
						extra.signal,
					)) as Record<string, unknown> & McpElicitationResult,
			);
			const transport = this.createTransport(sdk);
			client.onclose = () => this.handleDisconnect(generation, "connection closed");
			client.onerror = () => {};
			await client.connect(transport, { timeout: this.options.connectTimeoutMs });
			if (generation !== this.generation) {
				await client.close().catch(() => {});
				return;
			}
			const connected = client;
			client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
				void this.refreshTools(connected, generation);
			});
			const tools = await this.listTools(client);
			if (generation !== this.generation) {
				await client.close().catch(() => {});
				return;
			}
			this.client = client;
			this.setTools(tools);
			this.state = "connected";
			this.attempt = 0;
			this.lastError = undefined;
			this.connectedAt = Date.now();
			const info = client.getServerVersion();
			this.serverInfo = info ? { name: info.name, version: info.version } : undefined;
			this.startPing(client, generation);
			this.options.onChange();
		} catch (error) {
			if (generation !== this.generation) return;
			this.lastError = this.describeFailure(messageOf(error));
			await client?.close().catch(() => {});
			this.scheduleReconnect();
		}
	}

	private describeFailure(message: string): string {
		const tail = this.stderrTail.trim().split("\n").slice(-3).join(" | ");
		return tail ? `${message}; stderr: ${tail}` : message;
	}

	private async listTools(client: Client): Promise<McpTool[]> {
		const tools: McpTool[] = [];
		let cursor: string | undefined;
		do {
			const page = await client.listTools(cursor ? { cursor } : {}, { timeout: this.options.connectTimeoutMs });
			tools.push(...page.tools);
			cursor = page.nextCursor;
		} while (cursor);
		const include = this.options.includeTools;
		return include ? tools.filter((t) => include.includes(t.name)) : tools;
	}

	/** Keeps the tools a plain `tools/call` can run; the rest go to `skippedTools`, reported when that set changes. */
	private setTools(listed: McpTool[]): void {
		const offered: McpTool[] = [];
		const skipped: SkippedMcpTool[] = [];
		for (const tool of listed) {
			if (tool.execution?.taskSupport === "required") skipped.push({ name: tool.name, reason: TASK_REQUIRED_REASON });
			else offered.push(tool);
		}
		this.remoteTools = offered;
		this.skippedTools = skipped;
		const key = skipped.map((tool) => tool.name).join("\n");
		if (key !== this.reportedSkips) {
			this.reportedSkips = key;
			if (skipped.length > 0) {
				this.options.logger?.warn(
					{ mcpServer: this.name, skippedTools: skipped.map((tool) => tool.name) },
					`MCP server ${this.name}: tools left out: ${skipped.map((tool) => tool.name).join(", ")}; each ${TASK_REQUIRED_REASON}`,
				);
			}
		}
	}

	private async refreshTools(client: Client, generation: number): Promise<void> {
		try {
			const tools = await this.listTools(client);
			if (generation !== this.generation) return;
			this.setTools(tools);
			this.options.onChange();
		} catch (error) {
			if (generation === this.generation) this.lastError = `re-listing tools failed: ${messageOf(error)}`;
		}
	}

	private startPing(client: Client, generation: number): void {
		clearInterval(this.pingTimer);
		if (this.options.pingIntervalMs <= 0) return;
		this.pingTimer = setInterval(() => {
			client.ping({ timeout: Math.min(this.options.pingIntervalMs, 10_000) }).catch((error) => {
				// A server that answers with a protocol error (e.g. no ping support) is alive.
				const { ErrorCode, McpError } = this.sdk!;
				const alive =
					error instanceof McpError &&
					error.code !== ErrorCode.RequestTimeout &&
					error.code !== ErrorCode.ConnectionClosed;
				if (!alive) this.handleDisconnect(generation, `ping failed: ${messageOf(error)}`);
			});
		}, this.options.pingIntervalMs);
		this.pingTimer.unref();
	}

	/** The connection of `generation` is gone: record why and start reconnecting (once per connection). */
	private handleDisconnect(generation: number, reason: string): void {
		if (generation !== this.generation || this.state !== "connected") return;
		this.generation++;
		clearInterval(this.pingTimer);
		const client = this.client;
		this.client = undefined;
		this.lastError = this.describeFailure(reason);
		void client?.close().catch(() => {});
		this.scheduleReconnect();
	}

	private scheduleReconnect(): void {
		if (this.state === "stopped") return;
		this.attempt++;
		const { initialDelayMs, maxDelayMs, maxAttempts } = this.options.reconnect;
		if (maxAttempts > 0 && this.attempt > maxAttempts) {
			this.state = "failed";
			this.options.onChange();
			return;
		}
		this.state = "connecting";
		const delay = Math.min(initialDelayMs * 2 ** (this.attempt - 1), maxDelayMs);
		clearTimeout(this.retryTimer);
		this.retryTimer = setTimeout(() => void this.connect(), delay);
		this.retryTimer.unref();
		this.options.onChange();
	}
}
