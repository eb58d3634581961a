/**
 * Wheelhouse's public library surface: the pi-agent-core 0.73.1 contract (named as the reference
 * names it) plus the LLM layer it rests on, grouped by layer, one section each.
 *
 * Name clash: both layers define `ThinkingLevel`. As in pi-agent-core, the root exports the
 * agent's (`"off" | "minimal" | … | "xhigh"`); the model layer's levels are `ModelThinkingLevel`.
 */
// biome-ignore-all assist/source/organizeImports: exports stay grouped by layer, which sorting would scatter.

// ── LLM layer: messages, models, the streaming protocol ────────────────────────────────────────────
export type {
	AnthropicMessagesCompat,
	Api,
	AssistantMessage,
	AssistantMessageDiagnostic,
	AssistantMessageEvent,
	CacheRetention,
	Context,
	ImageContent,
	KnownApi,
	KnownProvider,
	Message,
	Model,
	ModelThinkingLevel,
	OpenAICompletionsCompat,
	OpenAIResponsesCompat,
	Provider,
	ProviderResponse,
	ProviderStreamOptions,
	SimpleStreamOptions,
	StopReason,
	StreamOptions,
	TextContent,
	ThinkingBudgets,
	ThinkingContent,
	ThinkingLevelMap,
	Tool,
	ToolCall,
	ToolResultMessage,
	Transport,
	Usage,
	UserMessage,
} from "./ai/types.js";
export {
	AssistantMessageEventStream,
	createAssistantMessageEventStream,
	EventStream,
	type StreamFunction,
} from "./ai/event-stream.js";
export { createAssistantMessage } from "./ai/assistant-message.js";
export { errorStream, streamSimple } from "./ai/stream.js";
export {
	type ApiStreamFunction,
	getApiProvider,
	getRegisteredApis,
	registerApiProvider,
	unregisterApiProvider,
} from "./ai/registry.js";
export { validateToolArguments } from "./ai/validation.js";

// ── Scripted model (tests and demos) ───────────────────────────────────────────────────────────────
export {
	type FauxChunking,
	type FauxContentBlock,
	type FauxModelDefinition,
	type FauxProviderRegistration,
	type FauxResponseFactory,
	type FauxResponseStep,
	fauxAssistantMessage,
	fauxText,
	fauxThinking,
	fauxToolCall,
	type RegisterFauxProviderOptions,
	registerFauxProvider,
	type ScriptedTurn,
	type ScriptedTurnOptions,
	streamScriptedTurn,
} from "./ai/providers/faux.js";

// ── Agent core: the contract, the loop, the Agent ──────────────────────────────────────────────────
export type {
	AfterToolCallContext,
	AfterToolCallResult,
	AgentContext,
	AgentEvent,
	AgentLoopConfig,
	AgentMessage,
	AgentState,
	AgentTool,
	AgentToolCall,
	AgentToolResult,
	AgentToolUpdateCallback,
	BeforeToolCallContext,
	BeforeToolCallResult,
	CustomAgentMessages,
	ShouldStopAfterTurnContext,
	StreamFn,
	ThinkingLevel,
	ToolExecutionMode,
} from "./agent/types.js";
export { Agent, type AgentOptions } from "./agent/agent.js";
export { type AgentEventSink, agentLoop, agentLoopContinue, runAgentLoop, runAgentLoopContinue } from "./agent/loop.js";
export { PendingMessageQueue, type QueueMode } from "./agent/queue.js";

// ── Providers (wire APIs) ──────────────────────────────────────────────────────────────────────────
// Model registry, keys, the shared provider driver, OpenAI wire APIs (src/ai/index.ts).
export * from "./ai/index.js";

// ── Tools: built-ins, MCP servers, HTTP tools, client-side tools, approvals (src/tools/index.ts) ──
export * from "./tools/index.js";
