/**
 * All configured MCP servers, and their tools as `AgentTool`s named `<server>__<tool>`.
 *
 * Config is resolved in the constructor (`${ENV}` substitution, URL parsing) so a bad entry fails
 * startup naming the field; connecting happens in `start()` and never fails startup: a server
 * that is down is retried in the background and reported by `status()`.
 *
 * Elicitations the servers send during a tool call go to the handler `setElicitationHandler`
 * installed (elicitation.ts), with the call's tool call id; without one they are answered `cancel`.
 */
import type { TSchema } from "@sinclair/typebox";
import type { AgentTool, AgentToolResult } from "../../agent/types.js";
import type { McpServerConfig } from "../config.js";
import { substituteEnv, substituteEnvRecord } from "../env.js";
import type { IdempotentMark } from "../idempotent.js";
import { type McpLogger, McpServerConnection, type McpServerStatus, type ResolvedMcpServer } from "./connection.js";
import { type McpToolResultDetails, resultContent, resultErrorText } from "./content.js";
import type { McpElicitationHandler } from "./elicitation.js";

export interface McpManagerOptions {
	/** Environment for `${ENV}` substitution; default `process.env`. */
	env?: NodeJS.ProcessEnv;
	/** Reported to servers at initialize. */
	clientInfo?: { name: string; version: string };
	/** Told which listed tools are left out and why (e.g. the server's `app.log`); default: nobody. */
	logger?: McpLogger;
}

/** Where an MCP-provided tool comes from (for `GET /v1/tools`). */
export interface McpToolOrigin {
	kind: "mcp";
	server: string;
	/** The tool's name on the MCP server. */
	tool: string;
}

export type McpAgentTool = AgentTool<TSchema, McpToolResultDetails> & { origin: McpToolOrigin } & IdempotentMark;

/** `<server>__<tool>` with characters providers reject replaced by `_`, at most 64 characters. */
export function qualifiedToolName(server: string, tool: string): string {
	return `${server}__${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`.slice(0, 64);
}

function resolveServer(name: string, config: McpServerConfig, env: NodeJS.ProcessEnv): ResolvedMcpServer {
	const where = `tools.mcpServers.${name}`;
	if ("url" in config) {
		let url: URL;
		try {
			url = new URL(substituteEnv(config.url, `${where}.url`, env));
		} catch (error) {
			if (error instanceof Error && error.name === "MissingEnvError") throw error;
			throw new Error(`${where}.url: not an absolute URL: ${config.url}`);
		}
		if (url.protocol !== "http:" && url.protocol !== "https:") {
			throw new Error(`${where}.url: must be http(s), got ${url.protocol}`);
		}
		return { transport: "http", url, headers: substituteEnvRecord(config.headers, `${where}.headers`, env) };
	}
	return {
		transport: "stdio",
		command: config.command,
		args: config.args ?? [],
		env: substituteEnvRecord(config.env, `${where}.env`, env),
		...(config.cwd ? { cwd: config.cwd } : {}),
	};
}

export class McpManager {
	private readonly connections = new Map<string, McpServerConnection>();
	private readonly listeners = new Set<(status: McpServerStatus) => void>();
	private readonly toolCache = new Map<string, { remote: unknown; tool: McpAgentTool }>();
	/** Servers whose config declares every tool idempotent. */
	private readonly idempotentServers = new Set<string>();
	private elicitationHandler?: McpElicitationHandler;

	/** Throws (naming the field) on an unset `${ENV}` variable or a malformed URL. */
	constructor(servers: Record<string, McpServerConfig> = {}, options: McpManagerOptions = {}) {
		const env = options.env ?? process.env;
		for (const [name, config] of Object.entries(servers)) {
			if (config.enabled === false) continue;
			if (!/^[A-Za-z0-9_-]{1,32}$/.test(name)) {
				throw new Error(`tools.mcpServers.${name}: server names may only use A-Z a-z 0-9 _ - (at most 32)`);
			}
			const connection: McpServerConnection = new McpServerConnection(name, resolveServer(name, config, env), {
				timeoutMs: config.timeoutMs ?? 60_000,
				connectTimeoutMs: config.connectTimeoutMs ?? 30_000,
				pingIntervalMs: config.pingIntervalMs ?? 30_000,
				reconnect: {
					initialDelayMs: config.reconnect?.initialDelayMs ?? 500,
					maxDelayMs: config.reconnect?.maxDelayMs ?? 30_000,
					maxAttempts: config.reconnect?.maxAttempts ?? 0,
				},
				...(config.includeTools ? { includeTools: config.includeTools } : {}),
				clientInfo: options.clientInfo ?? { name: "wheelhouse", version: "0.1.0" },
				onChange: () => this.emit(connection.status()),
				elicit: (request, call, signal) => {
					const handler = this.elicitationHandler;
					if (!handler) return Promise.resolve({ action: "cancel" as const });
					return handler({
						server: name,
						toolCallId: call.toolCallId,
						toolName: qualifiedToolName(name, call.tool),
						message: request.message,
						requestedSchema: request.requestedSchema,
						signal,
					});
				},
				...(options.logger ? { logger: options.logger } : {}),
			});
			this.connections.set(name, connection);
			if (config.idempotent === true) this.idempotentServers.add(name);
		}
	}

	/** Who answers the servers' elicitations from now on (the server's sessions); replaces the previous one. */
	setElicitationHandler(handler: McpElicitationHandler | undefined): void {
		this.elicitationHandler = handler;
	}

	/** Connects every server (in parallel); resolves once each has connected or scheduled a retry. */
	async start(): Promise<void> {
		await Promise.all([...this.connections.values()].map((c) => c.start()));
	}

	/** Disconnects every server and stops retrying. Idempotent. */
	async stop(): Promise<void> {
		await Promise.all([...this.connections.values()].map((c) => c.stop()));
	}

	status(): McpServerStatus[] {
		return [...this.connections.values()].map((c) => c.status());
	}

	/**
	 * Listens for state and tool-list changes (one call per change, with that server's status).
	 * Returns the unsubscribe function. Contract: the listener must not throw.
	 */
	onChange(listener: (status: McpServerStatus) => void): () => void {
		this.listeners.add(listener);
		return () => this.listeners.delete(listener);
	}

	/** The current tools of every server (including ones whose server is reconnecting: calls then fail clearly). */
	tools(): McpAgentTool[] {
		const out: McpAgentTool[] = [];
		const seen = new Set<string>();
		for (const connection of this.connections.values()) {
			for (const remote of connection.tools()) {
				const name = qualifiedToolName(connection.name, remote.name);
				// Two remote names can sanitize to one (`a.b`, `a_b`): the first keeps it.
				if (seen.has(name)) continue;
				seen.add(name);
				const cached = this.toolCache.get(name);
				if (cached && cached.remote === remote) {
					out.push(cached.tool);
					continue;
				}
				const tool = this.createTool(connection, remote);
				this.toolCache.set(name, { remote, tool });
				out.push(tool);
			}
		}
		return out;
	}

	private emit(status: McpServerStatus): void {
		for (const listener of this.listeners) listener(status);
	}

	private createTool(
		connection: McpServerConnection,
		remote: ReturnType<McpServerConnection["tools"]>[number],
	): McpAgentTool {
		const name = qualifiedToolName(connection.name, remote.name);
		return {
			name,
			label: `${connection.name}: ${remote.title ?? remote.annotations?.title ?? remote.name}`,
			description: remote.description ?? `Tool ${remote.name} of MCP server ${connection.name}`,
			parameters: remote.inputSchema as unknown as TSchema,
			origin: { kind: "mcp", server: connection.name, tool: remote.name },
			idempotent: this.idempotentServers.has(connection.name),
			async execute(toolCallId, params, signal, onUpdate): Promise<AgentToolResult<McpToolResultDetails>> {
				const details: McpToolResultDetails = { server: connection.name, tool: remote.name };
				const result = await connection.callTool(
					remote.name,
					(params ?? {}) as Record<string, unknown>,
					signal,
					onUpdate
						? (progress) =>
								onUpdate({
									content: [
										{
											type: "text",
											text:
												progress.message ??
												`progress ${progress.progress}${progress.total !== undefined ? `/${progress.total}` : ""}`,
										},
									],
									details: { ...details, progress },
								} as AgentToolResult<McpToolResultDetails>)
						: undefined,
					toolCallId,
				);
				if (result.isError) throw new Error(resultErrorText(result, name));
				return {
					content: resultContent(result),
					details: {
						...details,
						...(result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}),
					},
				};
			},
		};
	}
}
