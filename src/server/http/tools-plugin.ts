/**
 * Tools a deployment configures, registered on a built app: HTTP tools and MCP servers
 * from the config file's `tools` section (`ToolsConfig` of src/tools/config.ts), client-side tools and
 * approvals for sessions, their routes, and `GET /v1/tools/mcp-servers`.
 *
 * A bad entry stops startup with a {@link ConfigError} naming the field — an approval rule too
 * that names no tool and matches none (MCP servers that are down may be named by their prefix
 * `server__`: see `ServerTools.approvalPolicy` for how that fails closed). MCP servers connect
 * before the server listens; one that is down does not stop startup: it is retried in the
 * background, its state is in `GET /v1/tools/mcp-servers`, and its tools appear once it lists them.
 */
import { Type } from "@sinclair/typebox";
import { Value, type ValueError } from "@sinclair/typebox/value";
import type { FastifyInstance } from "fastify";
import {
	approvalRuleProblems,
	McpHttpServerSchema,
	McpStdioServerSchema,
	MissingEnvError,
	ServerTools,
	type ToolsConfig,
	ToolsConfigSchema,
} from "../../tools/index.js";
import { ConfigError, type ServerConfig } from "../config/config.js";
import { type ToolDeclarations, ToolDeclarationsBody, ToolInteractions } from "../runtime/session/tool-interactions.js";
import { approvalRoutes } from "./routes/approvals.js";
import { elicitationRoutes } from "./routes/elicitations.js";
import { toolResultRoutes } from "./routes/tool-results.js";
import { responses, SessionParams, SessionView } from "./schemas.js";

export interface ToolsPluginOptions {
	env?: NodeJS.ProcessEnv;
}

/** The `tools` section of the server config, validated; throws {@link ConfigError} naming the field. */
export function toolsConfigFrom(config: ServerConfig): ToolsConfig {
	const section = config.tools;
	if (section === undefined) return {};
	// An MCP entry is one of two shapes: report the error of the shape it meant (url → HTTP), not "expected union".
	const servers = (section as { mcpServers?: unknown }).mcpServers;
	if (servers && typeof servers === "object" && !Array.isArray(servers)) {
		for (const [name, entry] of Object.entries(servers)) {
			const schema = entry && typeof entry === "object" && "url" in entry ? McpHttpServerSchema : McpStdioServerSchema;
			fail(`tools.mcpServers.${name}`, Value.Errors(schema, entry).First());
		}
	}
	fail("tools", Value.Errors(ToolsConfigSchema, section).First());
	return section as ToolsConfig;
}

function fail(prefix: string, error: ValueError | undefined): void {
	if (!error) return;
	throw new ConfigError(
		`${prefix}${error.path.replaceAll("/", ".")}`,
		`${error.message.toLowerCase()} (got ${JSON.stringify(error.value)?.slice(0, 200)})`,
	);
}

const McpServerList = Type.Object({
	servers: Type.Array(
		Type.Object(
			{
				name: Type.String(),
				transport: Type.Union([Type.Literal("stdio"), Type.Literal("http")]),
				state: Type.Union([
					Type.Literal("connecting"),
					Type.Literal("connected"),
					Type.Literal("failed"),
					Type.Literal("stopped"),
				]),
				attempt: Type.Integer({ description: "Reconnect attempt in progress (0 while connected)" }),
				lastError: Type.Optional(Type.String()),
				toolCount: Type.Integer(),
				connectedAt: Type.Optional(Type.Number()),
				serverInfo: Type.Optional(Type.Object({ name: Type.String(), version: Type.String() })),
				tools: Type.Array(Type.String(), { description: "Names of its tools as sessions see them (server__tool)" }),
				skippedTools: Type.Optional(
					Type.Array(Type.Object({ name: Type.String(), reason: Type.String() }, { additionalProperties: false }), {
						description:
							"Tools the server lists that sessions are not given (name on the server, and why), e.g. ones that require task-based execution",
					}),
				),
			},
			{ additionalProperties: false },
		),
	),
});

/**
 * Registers configured tools, the session extension and the routes. Register after `app.wheelhouse`
 * is decorated (in `buildApp`), with `{ env }`.
 */
export async function registerTools(app: FastifyInstance, options: ToolsPluginOptions = {}): Promise<ToolInteractions> {
	const { config, sessions, toolOrigins } = app.wheelhouse;
	let serverTools: ServerTools;
	try {
		serverTools = new ServerTools(toolsConfigFrom(config), { builtins: false, env: options.env, logger: app.log });
	} catch (error) {
		if (error instanceof ConfigError) throw error;
		if (error instanceof MissingEnvError)
			throw new ConfigError(error.where, `environment variable ${error.variable} is not set`);
		const message = error instanceof Error ? error.message : String(error);
		const [field, ...rest] = message.split(": ");
		throw new ConfigError(rest.length ? field! : "tools", rest.length ? rest.join(": ") : message);
	}

	app.wheelhouse.toolApprovalPolicy = (toolName, sessionRules) => serverTools.approvalPolicy(toolName, sessionRules);
	const existing = new Set(sessions.tools.keys());
	for (const tool of serverTools.tools()) {
		if (existing.has(tool.name))
			throw new ConfigError("httpTools", `"${tool.name}" is already a built-in or library tool`);
		sessions.addTool(tool);
		toolOrigins.set(tool.name, "http");
	}

	// MCP tools come and go with their servers' lists.
	const mcpNames = new Set<string>();
	const syncMcp = () => {
		const current = new Map(serverTools.mcp.tools().map((t) => [t.name, t]));
		for (const name of mcpNames) {
			if (!current.has(name)) {
				sessions.removeTool(name);
				toolOrigins.delete(name);
				mcpNames.delete(name);
			}
		}
		for (const [name, tool] of current) {
			if (existing.has(name)) continue;
			sessions.addTool(tool);
			toolOrigins.set(name, "mcp");
			mcpNames.add(name);
		}
		for (const session of sessions.liveSessions()) session.refreshTools();
	};
	serverTools.mcp.onChange(syncMcp);
	await serverTools.start();
	syncMcp();
	// Startup goes on without a server that is down; say so once, where the operator looks first.
	for (const status of serverTools.mcpStatus()) {
		if (status.state === "connected") continue;
		app.log.warn(
			{ mcpServer: status.name, state: status.state, error: status.lastError },
			`MCP server "${status.name}" is unreachable (${status.lastError ?? status.state}); its tools are missing until it connects. Retrying in the background; GET /v1/tools/mcp-servers shows its state`,
		);
	}
	app.addHook("onClose", async function stopMcpServers() {
		await serverTools.stop();
	});
	// Approval rules of the config and of its profiles: against the tools registered now.
	const ruleSets: [string, Readonly<Record<string, unknown>> | undefined][] = [
		["tools.approval", serverTools.config.approval],
		...[...app.wheelhouse.profiles].map(([name, p]): [string, Readonly<Record<string, unknown>> | undefined] => [
			`profiles.${name}.toolApprovals`,
			p.toolApprovals,
		]),
	];
	for (const [field, rules] of ruleSets) {
		const problem = approvalRuleProblems(rules ?? {}, serverTools.approvalTargets(sessions.tools.keys()))[0];
		if (problem) {
			await serverTools.stop();
			throw new ConfigError(`${field}.${problem.entry}`, problem.message);
		}
	}

	const interactions = new ToolInteractions({
		serverTools,
		store: sessions.store,
		approvalTimeoutMs: serverTools.approvalTimeoutMs,
		clientToolTimeoutMs: serverTools.clientToolTimeoutMs,
		serverToolNames: () => sessions.tools.keys(),
	});
	sessions.addExtension(interactions);
	// MCP servers that ask for input during a tool call ask the session running it.
	serverTools.mcp.setElicitationHandler((elicitation) => interactions.elicit(elicitation));
	await app.register(toolResultRoutes);
	await app.register(approvalRoutes);
	await app.register(elicitationRoutes);

	app.put(
		"/v1/sessions/:id/tool-declarations",
		{
			schema: {
				summary:
					"Replace the session's client-side tools and/or per-session approval policies (stored; the same as these fields of PATCH /v1/sessions/:id)",
				params: SessionParams,
				body: ToolDeclarationsBody,
				response: responses({ 200: SessionView }),
			},
		},
		async function putToolDeclarations(request) {
			// As PATCH applies them: through the port, so a run on another replica takes them in too.
			const port = await sessions.open((request.params as { id: string }).id, request.ownerId);
			return port.patch(request.body as ToolDeclarations);
		},
	);

	app.get(
		"/v1/tools/mcp-servers",
		{
			schema: {
				tags: ["catalog"],
				summary: "The configured MCP servers: connection state, last error, and their tools",
				response: responses({ 200: McpServerList }),
			},
		},
		async function listMcpServers() {
			const tools = serverTools.mcp.tools();
			return {
				servers: serverTools.mcpStatus().map((status) => ({
					...status,
					tools: tools.filter((t) => t.origin.server === status.name).map((t) => t.name),
				})),
			};
		},
	);
	return interactions;
}
