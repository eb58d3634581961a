/**
 * The OpenAPI description of the A2A routes (the JSON-RPC messages are A2A's own; see
 * docs/a2a.md).
 */
import { Type } from "@sinclair/typebox";

export const AgentCardBody = Type.Object(
	{
		name: Type.String(),
		description: Type.String(),
		supportedInterfaces: Type.Array(Type.Object({}, { additionalProperties: true })),
		version: Type.String(),
		capabilities: Type.Object({}, { additionalProperties: true }),
		skills: Type.Array(Type.Object({}, { additionalProperties: true })),
	},
	{ additionalProperties: true, title: "A2AAgentCard" },
);

export const A2aAnswer = {
	description:
		"A JSON-RPC 2.0 response (`result` or `error`, HTTP 200 either way); for SendStreamingMessage and SubscribeToTask a Server-Sent Events stream of JSON-RPC responses whose `result` is a StreamResponse.",
	content: {
		"application/json": { schema: Type.Object({}, { additionalProperties: true }) },
		"text/event-stream": { schema: Type.String() },
	},
};
