/**
 * The tools layer's public surface: built-in, HTTP, MCP and client tools, approval policies and
 * pending calls, their configuration, and the server's tool set.
 */
export {
	type ApprovalHookOptions,
	type ApprovalOutcome,
	type ApprovalRuleProblem,
	type ApprovalRules,
	type ApprovalTargets,
	approvalRuleProblems,
	type BeforeToolCallHook,
	blockedReason,
	closestNames,
	createApprovalHook,
	resolveApprovalPolicy,
} from "./approvals.js";
export * from "./builtin/index.js";
export {
	type ClientAgentTool,
	type ClientToolDetails,
	type ClientToolOptions,
	type ClientToolOrigin,
	ClientToolResultBodySchema,
	type ClientToolSpec,
	ClientToolSpecSchema,
	createClientTool,
	validateClientToolSpecs,
} from "./client-tools.js";
export * from "./config.js";
export { MissingEnvError, substituteEnv, substituteEnvRecord } from "./env.js";
export {
	createHttpTool,
	createHttpTools,
	type HttpAgentTool,
	type HttpToolDetails,
	type HttpToolOrigin,
} from "./http-tools.js";
export { type IdempotentMark, isIdempotentTool } from "./idempotent.js";
export * from "./mcp/index.js";
export {
	type ApprovalDecision,
	type ClientToolResult,
	type ElicitationAnswer,
	formatDuration,
	INTERRUPTED_RESOLUTION,
	PendingInteractions,
	type PendingInteractionsOptions,
	type PendingKind,
	type PendingPersistence,
	type PendingRequest,
	type PendingValue,
	type ResolveOutcome,
	type StoredPending,
	storedRequest,
	type WaitOutcome,
} from "./pending.js";
export { ServerTools, type ServerToolsOptions, type ToolInfo, type ToolOrigin } from "./server-tools.js";
