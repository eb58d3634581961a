/**
 * The parts of the MCP SDK a connection runs, in one module that connection.ts imports on its
 * first connect: the SDK (and the zod it brings) is large, and a server with no MCP servers
 * configured never loads it.
 */
export { Client } from "@modelcontextprotocol/sdk/client/index.js";
export { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
export { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
export {
	CallToolResultSchema,
	ElicitRequestSchema,
	ErrorCode,
	McpError,
	ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
