export type { McpLogger, McpServerState, McpServerStatus, SkippedMcpTool } from "./mcp/connection.js";
export { type McpToolResultDetails, mapMcpContent } from "./mcp/content.js";
export {
	type McpAgentTool,
	McpManager,
	type McpManagerOptions,
	type McpToolOrigin,
	qualifiedToolName,
} from "./mcp/manager.js";
