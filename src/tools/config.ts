/**
 * The `tools` section of the server config file, as a TypeBox schema the server config embeds:
 *
 * ```json
 * {
 *   "tools": {
 *     "mcpServers": {
 *       "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"] },
 *       "search": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer ${SEARCH_TOKEN}" } }
 *     },
 *     "httpTools": [
 *       { "name": "get_weather", "description": "Current weather", "method": "GET",
 *         "url": "https://api.example.com/weather?city={city}",
 *         "parameters": { "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] } }
 *     ],
 *     "approval": { "get_weather": "never", "files__*": "always" }
 *   }
 * }
 * ```
 *
 * `${NAME}` in headers, env values and URLs is replaced by the environment variable at load; a
 * missing variable fails the load naming it (see `env.ts`).
 */
import { type Static, Type } from "@sinclair/typebox";

/** Names become the `server` part of `server__tool` tool names, so they are restricted to what providers accept. */
export const MCP_SERVER_NAME_PATTERN = "^[A-Za-z0-9_-]{1,32}$";
/** The tool-name alphabet every provider accepts (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`). */
export const TOOL_NAME_PATTERN = "^[A-Za-z0-9_-]{1,64}$";

export const ApprovalPolicySchema = Type.Union([Type.Literal("always"), Type.Literal("never")], {
	description:
		'"always": every call waits for a human decision (POST .../approvals/:toolCallId); "never": runs at once',
});
export type ApprovalPolicy = Static<typeof ApprovalPolicySchema>;

/**
 * The same policy as a string enum, for request bodies validated by Ajv: a bad value is reported
 * as `must be one of: always, never` instead of two `anyOf` messages. (TypeBox's `Value` cannot
 * check it, so the config file keeps {@link ApprovalPolicySchema}.)
 */
export const ApprovalPolicyEnum = Type.Unsafe<ApprovalPolicy>({
	type: "string",
	enum: ["always", "never"],
	description: ApprovalPolicySchema.description,
});

const ReconnectSchema = Type.Object(
	{
		initialDelayMs: Type.Optional(Type.Integer({ minimum: 1, default: 500 })),
		maxDelayMs: Type.Optional(Type.Integer({ minimum: 1, default: 30_000 })),
		/** 0 = retry forever. */
		maxAttempts: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
	},
	{ additionalProperties: false, description: "Exponential backoff after a crash or disconnect" },
);

const McpCommonFields = {
	/** Per-request timeout; progress notifications reset it. */
	timeoutMs: Type.Optional(Type.Integer({ minimum: 1, default: 60_000 })),
	/** Timeout of connecting and listing tools. */
	connectTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, default: 30_000 })),
	/** A ping this often detects a dead server between calls; 0 disables. */
	pingIntervalMs: Type.Optional(Type.Integer({ minimum: 0, default: 30_000 })),
	reconnect: Type.Optional(ReconnectSchema),
	/** Only these remote tool names are exposed (default: all). */
	includeTools: Type.Optional(Type.Array(Type.String())),
	/** Approval policy for every tool of this server (a per-tool entry in `approval` wins). */
	approval: Type.Optional(ApprovalPolicySchema),
	enabled: Type.Optional(Type.Boolean({ default: true })),
	/**
	 * Every tool of this server is idempotent: a call may be run again with the same arguments when the process running it died before
	 * its result was stored (the session's `onInterrupt: "continue"`); otherwise the model gets an
	 * error result saying the call's result was not recorded.
	 */
	idempotent: Type.Optional(Type.Boolean({ default: false })),
};

export const McpStdioServerSchema = Type.Object(
	{
		type: Type.Optional(Type.Literal("stdio")),
		command: Type.String({ minLength: 1 }),
		args: Type.Optional(Type.Array(Type.String())),
		/** Added to a minimal inherited environment (PATH, HOME, ...); values may use `${ENV}`. */
		env: Type.Optional(Type.Record(Type.String(), Type.String())),
		cwd: Type.Optional(Type.String()),
		...McpCommonFields,
	},
	{ additionalProperties: false, title: "McpStdioServer" },
);

export const McpHttpServerSchema = Type.Object(
	{
		type: Type.Optional(Type.Union([Type.Literal("http"), Type.Literal("streamable-http")])),
		url: Type.String({ minLength: 1, description: "Streamable HTTP endpoint, e.g. https://host/mcp" }),
		/** Sent with every request; values may use `${ENV}`. */
		headers: Type.Optional(Type.Record(Type.String(), Type.String())),
		...McpCommonFields,
	},
	{ additionalProperties: false, title: "McpHttpServer" },
);

export const McpServerConfigSchema = Type.Union([McpStdioServerSchema, McpHttpServerSchema]);
export type McpStdioServerConfig = Static<typeof McpStdioServerSchema>;
export type McpHttpServerConfig = Static<typeof McpHttpServerSchema>;
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

export const HttpMethodSchema = Type.Union([
	Type.Literal("GET"),
	Type.Literal("POST"),
	Type.Literal("PUT"),
	Type.Literal("PATCH"),
	Type.Literal("DELETE"),
]);

export const HttpToolConfigSchema = Type.Object(
	{
		name: Type.String({ pattern: TOOL_NAME_PATTERN }),
		description: Type.String({ minLength: 1 }),
		/** JSON Schema of the arguments (an object schema). */
		parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
		method: Type.Optional(HttpMethodSchema),
		/**
		 * Absolute URL; `{arg}` placeholders are filled from the arguments (URL-encoded). The origin
		 * (scheme, host, port) must be literal: placeholders only in the path and query.
		 */
		url: Type.String({ minLength: 1 }),
		/** Values may use `${ENV}` (resolved at load). */
		headers: Type.Optional(Type.Record(Type.String(), Type.String())),
		timeoutMs: Type.Optional(Type.Integer({ minimum: 1, default: 10_000 })),
		maxResponseBytes: Type.Optional(Type.Integer({ minimum: 1, default: 1_048_576 })),
		approval: Type.Optional(ApprovalPolicySchema),
		/**
		 * A call may be run again with the same arguments when the process running it died before
		 * its result was stored (the session's `onInterrupt: "continue"`); otherwise the model gets an
		 * error result saying the call's result was not recorded.
		 */
		idempotent: Type.Optional(Type.Boolean({ default: false })),
	},
	{ additionalProperties: false, title: "HttpTool" },
);
export type HttpToolConfig = Static<typeof HttpToolConfigSchema>;

export const ToolsConfigSchema = Type.Object(
	{
		mcpServers: Type.Optional(
			Type.Record(Type.String({ pattern: MCP_SERVER_NAME_PATTERN }), McpServerConfigSchema, {
				description: "MCP servers by name; their tools are exposed as `<name>__<tool>`",
			}),
		),
		httpTools: Type.Optional(Type.Array(HttpToolConfigSchema)),
		/** Per tool name; a trailing `*` matches a prefix (`files__*`). Default "never". */
		approval: Type.Optional(Type.Record(Type.String(), ApprovalPolicySchema)),
		/** How long an approval or a client-side tool call waits before it fails. */
		approvalTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, default: 300_000 })),
		clientToolTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, default: 300_000 })),
	},
	{ additionalProperties: false, title: "ToolsConfig" },
);
export type ToolsConfig = Static<typeof ToolsConfigSchema>;
