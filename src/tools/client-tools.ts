/**
 * Client-side tools: declared by a session, executed by its client.
 *
 * When the model calls one, the loop emits `tool_execution_start` as for any tool; `execute`
 * registers a pending `client_tool` interaction and waits for the client's
 * `POST .../tool-results/:toolCallId` (delivered through `PendingInteractions.resolve`), the
 * timeout, or the run's abort. A result with `isError` and a timeout both become error results.
 */
import { type Static, type TSchema, Type } from "@sinclair/typebox";
import type { AgentTool, AgentToolResult } from "../agent/types.js";
import type { ImageContent, TextContent } from "../ai/types.js";
import { ApprovalPolicyEnum, TOOL_NAME_PATTERN } from "./config.js";
import { type ClientToolResult, formatDuration, type PendingInteractions, type PendingRequest } from "./pending.js";

/** What a session declares per client-side tool (part of the `POST /v1/sessions` body). */
export const ClientToolSpecSchema = Type.Object(
	{
		name: Type.String({ pattern: TOOL_NAME_PATTERN }),
		description: Type.String(),
		/** JSON Schema of the arguments (an object schema). */
		parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
		approval: Type.Optional(ApprovalPolicyEnum),
	},
	{ additionalProperties: false, title: "ClientToolSpec" },
);
export type ClientToolSpec = Static<typeof ClientToolSpecSchema>;

const ContentBlockSchema = Type.Union([
	Type.Object({ type: Type.Literal("text"), text: Type.String() }, { additionalProperties: false }),
	Type.Object(
		{ type: Type.Literal("image"), data: Type.String({ description: "base64" }), mimeType: Type.String() },
		{ additionalProperties: false },
	),
]);

/** Body of `POST /v1/sessions/:id/tool-results/:toolCallId`. */
export const ClientToolResultBodySchema = Type.Object(
	{
		content: Type.Union([Type.String(), Type.Array(ContentBlockSchema)], {
			description: "What the model sees: a string or text/image blocks",
		}),
		isError: Type.Optional(Type.Boolean({ default: false })),
		details: Type.Optional(Type.Unknown({ description: "Kept for UIs and logs; not sent to the model" })),
	},
	{ additionalProperties: false, title: "ClientToolResult" },
);

/** Where a client-side tool comes from (for tool listings). */
export interface ClientToolOrigin {
	kind: "client";
}

export interface ClientToolDetails {
	client: true;
	details?: unknown;
}

export type ClientAgentTool = AgentTool<TSchema, ClientToolDetails> & { origin: ClientToolOrigin };

export interface ClientToolOptions {
	pending: PendingInteractions;
	timeoutMs: number;
	/** Called once the call waits for the client. Must not throw. */
	onRequested?: (request: PendingRequest) => void;
}

function toContent(content: ClientToolResult["content"]): (TextContent | ImageContent)[] {
	return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

export function createClientTool(spec: ClientToolSpec, options: ClientToolOptions): ClientAgentTool {
	return {
		name: spec.name,
		label: spec.name,
		description: spec.description,
		parameters: (spec.parameters ?? { type: "object", properties: {} }) as unknown as TSchema,
		origin: { kind: "client" },
		async execute(toolCallId, params, signal): Promise<AgentToolResult<ClientToolDetails>> {
			const waiting = options.pending.wait({
				kind: "client_tool",
				toolCallId,
				toolName: spec.name,
				args: params,
				timeoutMs: options.timeoutMs,
				signal,
			});
			const request = options.pending.get("client_tool", toolCallId);
			if (request) options.onRequested?.(request);
			const outcome = await waiting;
			if (outcome.kind === "timeout") {
				throw new Error(
					`The client did not return a result for ${spec.name} within ${formatDuration(outcome.timeoutMs)}`,
				);
			}
			if (outcome.kind === "aborted") {
				throw outcome.reason instanceof Error ? outcome.reason : new Error(`${spec.name} was aborted`);
			}
			const result = outcome.value;
			const content = toContent(result.content);
			if (result.isError) {
				const text = content
					.filter((c): c is TextContent => c.type === "text")
					.map((c) => c.text)
					.join("\n");
				throw new Error(text || `The client reported an error for ${spec.name}`);
			}
			return {
				content,
				details: { client: true, ...(result.details !== undefined ? { details: result.details } : {}) },
			};
		},
	};
}

/**
 * Checks a session's declarations: valid unique names that do not shadow a server tool.
 * Returns the problems (empty when fine), each naming the field, for a 400 answer.
 */
export function validateClientToolSpecs(specs: ClientToolSpec[], serverToolNames: Iterable<string>): string[] {
	const problems: string[] = [];
	const server = new Set(serverToolNames);
	const seen = new Set<string>();
	specs.forEach((spec, i) => {
		if (seen.has(spec.name)) problems.push(`clientTools.${i}.name: duplicate tool name "${spec.name}"`);
		if (server.has(spec.name)) problems.push(`clientTools.${i}.name: "${spec.name}" is already a server tool`);
		if (spec.parameters && spec.parameters.type !== "object") {
			problems.push(`clientTools.${i}.parameters: must be a JSON Schema with "type": "object"`);
		}
		seen.add(spec.name);
	});
	return problems;
}
