/**
 * The OpenAPI description of the MCP endpoint's answers (the messages themselves are MCP's
 * JSON-RPC; see docs/mcp-server.md).
 */
import { Type } from "@sinclair/typebox";

export const McpAnswer = {
	description:
		"The JSON-RPC answers to the request's messages: a Server-Sent Events stream (progress notifications, then the result), as MCP's Streamable HTTP transport sends them.",
	content: {
		"text/event-stream": { schema: Type.String() },
		"application/json": { schema: Type.Object({}, { additionalProperties: true }) },
	},
};

export const McpAccepted = Type.Null({ description: "Notifications and responses only: accepted, nothing to answer." });
