/**
 * Declaration merging: an application adds its own message role to `CustomAgentMessages`, and the
 * role flows through `AgentMessage`, the `Agent`, and `convertToLlm`.
 */
import { describe, expectTypeOf, it } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import type { AgentLoopConfig, AgentMessage } from "../../src/agent/types.js";
import type { Message } from "../../src/ai/types.js";

type NotificationMessage = {
	role: "notification";
	text: string;
	timestamp: number;
};

declare module "../../src/agent/types.js" {
	interface CustomAgentMessages {
		notification: NotificationMessage;
	}
}

describe("CustomAgentMessages declaration merging", () => {
	it("adds the custom role to AgentMessage", () => {
		const note: AgentMessage = { role: "notification", text: "deployed", timestamp: 1 };
		expectTypeOf(note).toExtend<AgentMessage>();
		expectTypeOf<NotificationMessage>().toExtend<AgentMessage>();
		expectTypeOf<Extract<AgentMessage, { role: "notification" }>>().toEqualTypeOf<NotificationMessage>();
		// A role nobody declared is still rejected.
		// @ts-expect-error "telemetry" is not a declared role
		const bad: AgentMessage = { role: "telemetry", timestamp: 1 };
		void bad;
	});

	it("hands the custom role to convertToLlm, which narrows it away", () => {
		const convertToLlm: AgentLoopConfig["convertToLlm"] = (messages) => {
			expectTypeOf(messages).toEqualTypeOf<AgentMessage[]>();
			return messages.flatMap((message): Message[] => {
				if (message.role === "notification") {
					expectTypeOf(message).toEqualTypeOf<NotificationMessage>();
					return [{ role: "user", content: `[note] ${message.text}`, timestamp: message.timestamp }];
				}
				expectTypeOf(message).toEqualTypeOf<Message>();
				return [message];
			});
		};
		const agent = new Agent({ convertToLlm });
		agent.followUp({ role: "notification", text: "later", timestamp: 2 });
		expectTypeOf(agent.state.messages).toEqualTypeOf<AgentMessage[]>();
		expectTypeOf(agent.convertToLlm).parameter(0).toEqualTypeOf<AgentMessage[]>();
	});
});
