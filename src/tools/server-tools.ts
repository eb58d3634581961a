/**
 * The server's tool set: built-ins, tools passed by a library user, HTTP tools and MCP tools
 * from config, each with its origin (for `GET /v1/tools`) and approval policy.
 */
import type { AgentTool } from "../agent/types.js";
import { type ApprovalRules, resolveApprovalPolicy } from "./approvals.js";
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

	/** Resolves config synchronously; throws naming the field on a bad entry (unset `${ENV}`, bad URL, duplicate name). */
	constructor(
		readonly config: ToolsConfig = {},
		options: ServerToolsOptions = {},
	) {
		const env = options.env ?? process.env;
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

	/** The policy of a tool: config rules, then the session's rules (which win). */
	approvalPolicy(toolName: string, sessionRules?: ApprovalRules): ApprovalPolicy {
		return resolveApprovalPolicy(toolName, this.rules, sessionRules);
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
			approval: this.approvalPolicy(tool.name),
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
