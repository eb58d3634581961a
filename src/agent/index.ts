/**
 * The agent layer's public surface: the Agent, its loop functions, its message queue and its
 * types.
 */
export { Agent, type AgentOptions } from "./agent.js";
export { type AgentEventSink, agentLoop, agentLoopContinue, runAgentLoop, runAgentLoopContinue } from "./loop.js";
export { PendingMessageQueue, type QueueMode } from "./queue.js";
export type * from "./types.js";
