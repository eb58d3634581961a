/**
 * The server's tool set: built-ins, tools passed by a library user, HTTP tools and MCP tools
 * from config, each with its origin (for `GET /v1/tools`) and approval policy.
 */
import type { AgentTool } from "../agent/types.js";
import { type ApprovalRules, type ApprovalTargets, resolveApprovalPolicy } from "./approvals.js";
import { builtinTools } from "./builtin/index.js";
import type { ClientToolOrigin } from "./client-tools.js";
import type { ApprovalPolicy, ToolsConfig } from "./config.js";
import { createHttpTools, type HttpToolOrigin } from "./http-tools.js";
import { type McpLogger, McpManager, type McpServerStatus, type McpToolOrigin } from "./mcp/index.js";

export type ToolOrigin = { kind: "builtin" } | { kind: "library" } | HttpToolOrigin | McpToolOrigin | ClientToolOrigin;

/** One entry of `GET /v1/tools`. */
export interface ToolInfo {
	name: string;
	label: string;
	description: string;
	parameters: unknown;
	origin: ToolOrigin;
	approval: ApprovalPolicy;
	/** False while the tool's MCP server is not connected (calls fail with a clear error). */
	available: boolean;
}

export interface ServerToolsOptions {
	/** Tools a library user passes to `buildApp({ tools })`; they replace built-ins of the same name. */
	libraryTools?: AgentTool<any>[];
	/** Ship `get_current_time` and `calculate`. Default true. */
	builtins?: boolean;
	env?: NodeJS.ProcessEnv;
	/** Where MCP servers' left-out tools are reported (the app's logger). */
	logger?: McpLogger;
}

export class ServerTools {
	readonly mcp: McpManager;
	private readonly staticTools: { tool: AgentTool<any>; origin: ToolOrigin }[] = [];
	private readonly rules: ApprovalRules;
	readonly approvalTimeoutMs: number;
	readonly clientToolTimeoutMs: number;
	private readonly logger: McpLogger | undefined;

	/** Resolves config synchronously; throws naming the field on a bad entry (unset `${ENV}`, bad URL, duplicate name). */
	constructor(
		readonly config: ToolsConfig = {},
		options: ServerToolsOptions = {},
	) {
		const env = options.env ?? process.env;
		this.logger = options.logger;
		const library = options.libraryTools ?? [];
		const libraryNames = new Set(library.map((t) => t.name));
		if (options.builtins !== false) {
			for (const tool of builtinTools()) {
				if (!libraryNames.has(tool.name)) this.staticTools.push({ tool, origin: { kind: "builtin" } });
			}
		}
		for (const tool of library) this.staticTools.push({ tool, origin: { kind: "library" } });
		const names = new Set(this.staticTools.map((t) => t.tool.name));
		for (const tool of createHttpTools(config.httpTools, env)) {
			if (names.has(tool.name))
				throw new Error(`tools.httpTools: "${tool.name}" is already a built-in or library tool`);
			names.add(tool.name);
			this.staticTools.push({ tool, origin: tool.origin });
		}
		// Per-entry policies first, then the `approval` map (which wins).
		const entryRules: ApprovalRules = {};
		for (const http of config.httpTools ?? []) if (http.approval) entryRules[http.name] = http.approval;
		for (const [server, mcp] of Object.entries(config.mcpServers ?? {})) {
			if (mcp.approval) entryRules[`${server}__*`] = mcp.approval;
		}
		this.rules = { ...entryRules, ...(config.approval ?? {}) };
		this.approvalTimeoutMs = config.approvalTimeoutMs ?? 300_000;
		this.clientToolTimeoutMs = config.clientToolTimeoutMs ?? 300_000;
		this.mcp = new McpManager(config.mcpServers, { env, ...(options.logger ? { logger: options.logger } : {}) });
	}

	/** Connects MCP servers (never rejects; servers that are down are retried in the background). */
	async start(): Promise<void> {
		await this.mcp.start();
	}

	async stop(): Promise<void> {
		await this.mcp.stop();
	}

	/** Every current tool; MCP tools appear and disappear with their servers' lists. */
	tools(): AgentTool<any>[] {
		const names = new Set(this.staticTools.map((t) => t.tool.name));
		return [...this.staticTools.map((t) => t.tool), ...this.mcp.tools().filter((t) => !names.has(t.name))];
	}

	/** Tools by name, for sessions that enable a subset; unknown names are left out (check with `has`). */
	select(names?: string[]): AgentTool<any>[] {
		const all = this.tools();
		if (!names) return all;
		const wanted = new Set(names);
		return all.filter((t) => wanted.has(t.name));
	}

	has(name: string): boolean {
		return this.tools().some((t) => t.name === name);
	}

	/**
	 * What approval rules may name besides the tools registered now (`names`): the prefix
	 * `server__` of each configured MCP server whose tools are not listed (not connected).
	 */
	approvalTargets(names: Iterable<string>): ApprovalTargets {
		const connected = new Set(
			this.mcp
				.status()
				.filter((s) => s.state === "connected")
				.map((s) => s.name),
		);
		const unlistedPrefixes = Object.keys(this.config.mcpServers ?? {})
			.filter((server) => !connected.has(server))
			.map((server) => `${server}__`);
		return { names, unlistedPrefixes };
	}

	/**
	 * The policy of a tool: config rules, then the session's rules (which win). Fails closed for an
	 * MCP tool whose server's rules could not be checked when they were written (the server was not
	 * connected): when a rule names a tool of that server that its list lacks (a misspelt name),
	 * every tool of the server asks for approval, and a warning names the entries.
	 */
	approvalPolicy(toolName: string, sessionRules?: ApprovalRules): ApprovalPolicy {
		return this.policyOf(toolName, sessionRules, true);
	}

	/** {@link approvalPolicy}, warning of unmatched MCP entries only when `warn` (a call, not a listing). */
	private policyOf(toolName: string, sessionRules: ApprovalRules | undefined, warn: boolean): ApprovalPolicy {
		const policy = resolveApprovalPolicy(toolName, this.rules, sessionRules);
		if (policy === "always") return policy;
		const mcpTools = this.mcp.tools();
		const server = mcpTools.find((t) => t.name === toolName)?.origin.server;
		if (server === undefined) return policy;
		const prefix = `${server}__`;
		const listed = new Set(mcpTools.filter((t) => t.origin.server === server).map((t) => t.name));
		const unmatched = [this.rules, sessionRules ?? {}].flatMap((rules) =>
			Object.keys(rules).filter((entry) => entry.startsWith(prefix) && !entry.endsWith("*") && !listed.has(entry)),
		);
		if (unmatched.length === 0) return policy;
		if (warn)
			this.logger?.warn(
				{ tool: toolName, mcpServer: server, entries: unmatched },
				`approval rules name tools MCP server "${server}" does not list (${unmatched.join(", ")}): every tool of the server asks for approval until the rules are fixed`,
			);
		return "always";
	}

	/** `GET /v1/tools`. */
	list(): ToolInfo[] {
		const states = new Map(this.mcp.status().map((s) => [s.name, s.state]));
		const info = (tool: AgentTool<any>, origin: ToolOrigin): ToolInfo => ({
			name: tool.name,
			label: tool.label,
			description: tool.description,
			parameters: tool.parameters,
			origin,
			approval: this.policyOf(tool.name, undefined, false),
			available: origin.kind !== "mcp" || states.get(origin.server) === "connected",
		});
		const names = new Set(this.staticTools.map((t) => t.tool.name));
		return [
			...this.staticTools.map((t) => info(t.tool, t.origin)),
			...this.mcp
				.tools()
				.filter((t) => !names.has(t.name))
				.map((t) => info(t, t.origin)),
		];
	}

	mcpStatus(): McpServerStatus[] {
		return this.mcp.status();
	}
}
