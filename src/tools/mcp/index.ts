/**
 * The MCP tools' public surface: the manager of the configured servers and the mapping of their
 * results.
 */
export type { McpLogger, McpServerState, McpServerStatus, SkippedMcpTool } from "./connection.js";
export { type McpToolResultDetails, mapMcpContent } from "./content.js";
export {
	type ElicitationField,
	type ElicitationSchema,
	elicitationContentProblems,
	type McpElicitation,
	type McpElicitationHandler,
	type McpElicitationResult,
} from "./elicitation.js";
export {
	type McpAgentTool,
	McpManager,
	type McpManagerOptions,
	type McpToolOrigin,
	qualifiedToolName,
} from "./manager.js";
