/**
 * The parts of the MCP SDK the MCP server facade uses, in one module the route imports on its
 * first request: the SDK (and the zod it brings) is large, and a server nobody calls over MCP
 * never loads it.
 */
export { Server } from "@modelcontextprotocol/sdk/server/index.js";
export { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
export {
	CallToolRequestSchema,
	CancelTaskRequestSchema,
	ErrorCode,
	GetTaskPayloadRequestSchema,
	GetTaskRequestSchema,
	ListToolsRequestSchema,
	McpError,
	SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
