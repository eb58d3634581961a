/**
 * The MCP tools the facade serves: one per agent profile (`agent_<profile>`), or one `agent` for
 * the server's default agent when no profiles are configured. Each takes `{ message, sessionId? }`
 * and answers the agent's text with `structuredContent { sessionId, runId, status, usage }`.
 */
import type { AgentProfile } from "../../runtime/profiles.js";

export interface AgentTool {
	name: string;
	/** The profile it runs (undefined: the server's defaults). */
	profile: { name: string; profile: AgentProfile } | undefined;
	description: string;
}

/** MCP tool names: letters, digits, `_`, `-`, `.`, at most 128. */
function toolName(profile: string): string {
	return `agent_${profile.replace(/[^A-Za-z0-9_.-]/g, "_")}`.slice(0, 128);
}

export function agentTools(profiles: ReadonlyMap<string, AgentProfile>, defaultModel: string): AgentTool[] {
	if (profiles.size === 0) {
		return [
			{
				name: "agent",
				profile: undefined,
				description: `Ask the server's default agent (${defaultModel}). Without sessionId a new conversation; with the sessionId of an earlier answer, that conversation goes on.`,
			},
		];
	}
	return [...profiles].map(([name, profile]) => {
		const first = (profile.systemPrompt ?? "").split("\n").find((line) => line.trim() !== "");
		return {
			name: toolName(name),
			profile: { name, profile },
			description: `Ask the agent "${name}"${first ? `: ${first.trim().slice(0, 300)}` : ` (${profile.model})`}. Without sessionId a new conversation; with the sessionId of an earlier answer, that conversation goes on.`,
		};
	});
}

export const INPUT_SCHEMA = {
	type: "object",
	properties: {
		message: { type: "string", minLength: 1, description: "What to ask the agent." },
		sessionId: {
			type: "string",
			description: "Continue this session (the sessionId of an earlier answer); omit for a new one.",
		},
	},
	required: ["message"],
	additionalProperties: false,
} as const;

export const OUTPUT_SCHEMA = {
	type: "object",
	properties: {
		sessionId: { type: "string", description: "The Wheelhouse session: pass it back to continue." },
		runId: { type: "string" },
		status: { type: "string", enum: ["completed", "aborted", "error", "input_required"] },
		usage: { type: "object", description: "Tokens and cost of the run." },
		pending: {
			type: "array",
			description:
				"What the run waits for (status input_required): an approval or a client tool's result, answered over /v1.",
			items: { type: "object" },
		},
	},
	required: ["sessionId", "runId", "status", "usage"],
} as const;
