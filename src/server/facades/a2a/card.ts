/**
 * The agent card (`GET /.well-known/agent-card.json`, open without a key: a client reads it to
 * learn how to authenticate): the JSON-RPC interface at the facade's path, streaming and push
 * notifications on, one skill
 * per agent profile (the default agent when there are none), the bearer scheme when keys are
 * configured, and the event-id extension.
 */
import type { AgentProfile } from "../../runtime/profiles.js";
import { A2A_VERSION, EVENT_ID_EXTENSION } from "./wire.js";

export interface CardInput {
	/** The JSON-RPC endpoint's absolute URL. */
	url: string;
	profiles: ReadonlyMap<string, AgentProfile>;
	defaultModel: string;
	/** Whether requests need a bearer key. */
	auth: boolean;
	/** Whether push notifications are on. */
	push: boolean;
	version: string;
}

/** A profile's one-line description: its system prompt's first line, else its model. */
function describe(profile: AgentProfile): string {
	const first = (profile.systemPrompt ?? "").split("\n").find((line) => line.trim() !== "");
	return first ? first.trim().slice(0, 300) : `An agent on ${profile.model}.`;
}

export function agentCard(input: CardInput): Record<string, unknown> {
	const skills =
		input.profiles.size > 0
			? [...input.profiles].map(([name, profile]) => ({
					id: name,
					name,
					description: describe(profile),
					tags: ["profile"],
				}))
			: [
					{
						id: "default",
						name: "default",
						description: `The server's default agent (${input.defaultModel}).`,
						tags: ["default"],
					},
				];
	return {
		name: "Wheelhouse",
		description:
			"Wheelhouse agents over A2A: a task is a run, a context is a session. Name a skill (an agent profile) in the request's metadata.profile.",
		supportedInterfaces: [{ url: input.url, protocolBinding: "JSONRPC", protocolVersion: A2A_VERSION }],
		version: input.version,
		capabilities: {
			streaming: true,
			pushNotifications: input.push,
			extensions: [
				{
					uri: EVENT_ID_EXTENSION,
					description:
						"Every streamed response carries the session's event id in metadata.wheelhouse.eventId (and as the SSE id); SubscribeToTask with a Last-Event-ID header resumes right after that event.",
					required: false,
				},
			],
		},
		...(input.auth
			? {
					securitySchemes: {
						bearer: { httpAuthSecurityScheme: { scheme: "Bearer", description: "A Wheelhouse API key." } },
					},
					securityRequirements: [{ schemes: { bearer: { list: [] } } }],
				}
			: {}),
		defaultInputModes: ["text/plain", "application/json", "image/png", "image/jpeg", "image/webp", "image/gif"],
		defaultOutputModes: ["text/plain"],
		skills,
	};
}
