/**
 * Maps the results of MCP tool calls to the content and error text the model sees.
 */
import type { CallToolResult, ContentBlock } from "@modelcontextprotocol/sdk/types.js";
import type { ImageContent, TextContent } from "../../ai/types.js";

/** Structured parts of an MCP result kept for logs and UIs (the model sees `content`). */
export interface McpToolResultDetails {
	server: string;
	tool: string;
	structuredContent?: unknown;
}

/**
 * Maps MCP content blocks to agent content: text and images pass through; audio, embedded
 * resources and resource links become text the model can read (what they are and where).
 */
export function mapMcpContent(blocks: ContentBlock[]): (TextContent | ImageContent)[] {
	const out: (TextContent | ImageContent)[] = [];
	for (const block of blocks) {
		switch (block.type) {
			case "text":
				out.push({ type: "text", text: block.text });
				break;
			case "image":
				out.push({ type: "image", data: block.data, mimeType: block.mimeType });
				break;
			case "audio":
				out.push({ type: "text", text: `[audio ${block.mimeType}, ${block.data.length} base64 chars]` });
				break;
			case "resource": {
				const resource = block.resource as { uri: string; text?: string; mimeType?: string };
				out.push({
					type: "text",
					text: typeof resource.text === "string" ? resource.text : `[resource ${resource.uri}]`,
				});
				break;
			}
			case "resource_link":
				out.push({ type: "text", text: `[resource link ${block.uri}${block.name ? ` (${block.name})` : ""}]` });
				break;
			default:
				out.push({ type: "text", text: JSON.stringify(block) });
		}
	}
	return out;
}

/**
 * The agent content of a result: its content blocks, or the structured content as JSON when a
 * server sends only that.
 */
export function resultContent(result: CallToolResult): (TextContent | ImageContent)[] {
	const content = mapMcpContent(result.content ?? []);
	if (content.length === 0 && result.structuredContent !== undefined) {
		content.push({ type: "text", text: JSON.stringify(result.structuredContent) });
	}
	return content;
}

/** The error message of an `isError: true` result: its text, or a generic line. */
export function resultErrorText(result: CallToolResult, qualifiedName: string): string {
	const text = mapMcpContent(result.content ?? [])
		.filter((c): c is TextContent => c.type === "text")
		.map((c) => c.text)
		.join("\n")
		.trim();
	return text || `MCP tool ${qualifiedName} reported an error without a message`;
}
