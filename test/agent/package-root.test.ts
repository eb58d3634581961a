import { describe, expect, it } from "vitest";
import * as root from "../../src/index.js";

describe("package root", () => {
	it("exports the core API under the reference's names", () => {
		for (const name of [
			"agentLoop",
			"agentLoopContinue",
			"runAgentLoop",
			"runAgentLoopContinue",
			"Agent",
			"EventStream",
			"AssistantMessageEventStream",
			"createAssistantMessageEventStream",
			"validateToolArguments",
			"streamSimple",
			"registerApiProvider",
			"registerFauxProvider",
			"streamScriptedTurn",
		]) {
			expect(typeof (root as Record<string, unknown>)[name], name).toBe("function");
		}
	});

	it("runs an Agent end to end on the faux model through the registry", async () => {
		const faux = root.registerFauxProvider();
		try {
			faux.setResponses([{ content: "hi from faux" }]);
			const agent = new root.Agent({ initialState: { model: faux.getModel() } });
			await agent.prompt("hello");
			expect(agent.state.messages.at(-1)).toMatchObject({
				role: "assistant",
				content: [{ type: "text", text: "hi from faux" }],
			});
		} finally {
			faux.unregister();
		}
	});
});
