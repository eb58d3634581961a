/**
 * An AG-UI thread picks an agent profile with `forwardedProps.wheelhouse.profile` (the client sends
 * no agent name in `RunAgentInput`): the unmodified `HttpAgent` against a real server, a scripted
 * model recording what it was sent.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { aguiAgent, checkFraming, quietConsole, runOnce, type TestAgent } from "../../helpers/agui.js";
import { scriptedModel } from "../../helpers/scripted-session.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-test-key";
const model = scriptedModel("agui-profiles-faux");
const profiles = {
	support: {
		model: model.spec,
		systemPrompt: "You are the support agent.",
		tools: ["calculate"],
		thinkingLevel: "low",
	},
};

let server: TestServer;
let console_: ReturnType<typeof quietConsole>;
let clients: TestAgent[] = [];

beforeEach(() => {
	console_ = quietConsole();
	clients = [];
	model.requests.length = 0;
});
afterEach(async () => {
	try {
		for (const { bodies } of clients) for (const body of await Promise.all(bodies)) checkFraming(body);
	} finally {
		console_.restore();
		await server?.close();
	}
});

async function start(): Promise<void> {
	server = await startServer({ config: { apiKeys: [KEY], profiles }, models: [model.faux.getModel()] });
}

function client(threadId: string): TestAgent {
	const made = aguiAgent(server, KEY, { threadId });
	clients.push(made);
	return made;
}

async function sessionOfThread(threadId: string): Promise<Record<string, any>> {
	for (const live of server.app.wheelhouse.sessions.liveSessions()) {
		if (live.config.metadata["agui.threadId"] === threadId) {
			return (await server.request("GET", `/v1/sessions/${live.id}`, { key: KEY })).body;
		}
	}
	throw new Error(`no session for thread ${threadId}`);
}

describe("AG-UI threads with an agent profile", () => {
	it("forwardedProps.wheelhouse.profile gives the thread's session the profile; system messages follow its prompt", async () => {
		await start();
		model.script({ content: "Hello from support." }, { content: "Again." });
		const { agent } = client("profile-thread");
		agent.addMessage({ id: "s1", role: "system", content: "Answer in one line." });
		agent.addMessage({ id: "u1", role: "user", content: "hi" });
		const forwardedProps = { wheelhouse: { profile: "support" } };
		const { events } = await runOnce(agent, { forwardedProps });
		expect(events.at(-1)?.type).toBe("RUN_FINISHED");
		expect(model.requests[0]?.systemPrompt).toBe("You are the support agent.\n\nAnswer in one line.");
		expect(model.requests[0]?.tools?.map((tool) => tool.name)).toEqual(["calculate"]);
		expect(await sessionOfThread("profile-thread")).toMatchObject({
			model: model.spec,
			thinkingLevel: "low",
			tools: ["calculate"],
			metadata: { profile: "support", facade: "agui", "agui.threadId": "profile-thread" },
		});

		// A field beside the profile wins over the profile's.
		agent.addMessage({ id: "u2", role: "user", content: "again" });
		await runOnce(agent, { forwardedProps: { wheelhouse: { profile: "support", thinkingLevel: "high" } } });
		expect(model.requests[1]?.systemPrompt).toBe("You are the support agent.\n\nAnswer in one line.");
		expect(await sessionOfThread("profile-thread")).toMatchObject({ thinkingLevel: "high", tools: ["calculate"] });
		console_.check();
	});

	it("an unknown profile is refused before the stream (400 UNKNOWN_PROFILE)", async () => {
		await start();
		// An error envelope, not a stream: not one of the bodies checked for framing.
		const { agent } = aguiAgent(server, KEY, { threadId: "unknown-profile-thread" });
		agent.addMessage({ id: "u1", role: "user", content: "hi" });
		const rejected = await agent
			.runAgent({ forwardedProps: { wheelhouse: { profile: "sales" } } })
			.catch((err: unknown) => err);
		expect(rejected).toMatchObject({ status: 400, payload: { error: { code: "UNKNOWN_PROFILE" } } });
		expect(model.requests).toHaveLength(0);
	});
});
