/**
 * Both AG-UI client generations in use, each an unmodified `HttpAgent` against a real server:
 * `@ag-ui/client` 1.0 and 0.0.59 (the one CopilotKit's runtime pins). 0.0.59's schema refuses
 * `RUN_FINISHED.outcome` with `pendingToolCallIds` and the `cancelled` outcome; it declares no
 * `protocolVersion`, and gets the run's end in the shape it reads. Each client's own verifier and
 * schema check every stream; what they only warn about fails the test too.
 */
import * as client1 from "@ag-ui/client";
import * as client0 from "@ag-ui/client-0.0.59";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { quietConsole } from "../../helpers/agui.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "agui-versions-key";
let server: TestServer;
let console_: ReturnType<typeof quietConsole>;

beforeEach(() => {
	console_ = quietConsole();
});
afterEach(async () => {
	try {
		console_.check();
	} finally {
		console_.restore();
		await server?.close();
	}
});

const pickColor = {
	name: "pick_color",
	description: "Ask the user to pick a color",
	parameters: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
};

interface Message {
	id: string;
	role: string;
	content?: unknown;
	toolCalls?: { id: string; function: { name: string; arguments: string } }[];
}
interface Agent {
	threadId: string;
	messages: Message[];
	addMessage(message: unknown): void;
	runAgent(parameters?: unknown, subscriber?: unknown): Promise<unknown>;
	connectAgent(parameters?: unknown, subscriber?: unknown): Promise<unknown>;
}
interface Finished {
	event: { type: string; outcome?: unknown };
	outcome: string;
	pendingToolCallIds?: string[];
}
type Library = typeof client1 | typeof client0;

/** An `HttpAgent` of `library` whose `connectAgent()` reads the thread's catch-up stream at `query`. */
function agentOf(library: Library, query: string, config: Record<string, unknown> = {}): Agent {
	const base = server.url;
	class Catching extends (library.HttpAgent as typeof client1.HttpAgent) {
		protected override connect(input: { threadId: string }) {
			const url = `${base}/agui/v1/threads/${encodeURIComponent(input.threadId)}/events${query}`;
			const { runHttpRequest, transformHttpEventStream } = library as typeof client1;
			return transformHttpEventStream(
				runHttpRequest(() => this.fetch(url, { headers: this.headers, signal: this.abortController.signal })),
			);
		}
	}
	return new Catching({
		url: `${server.url}/agui/v1/run`,
		headers: { authorization: `Bearer ${KEY}` },
		...config,
	}) as unknown as Agent;
}

const LONG = Array.from({ length: 120 }, (_, i) => `w${i}`).join(" ");

const clients: [string, Library, string][] = [
	["@ag-ui/client 1.0", client1, ""],
	["@ag-ui/client 0.0.59", client0, "?protocolVersion=0.0.59"],
];

describe.each(clients)("%s", (name, library, catchUpQuery) => {
	const modern = library === client1;

	it("calls a frontend tool, and its result goes back to the same run", async () => {
		server = await startServer({ config: { apiKeys: [KEY], shutdownGraceMs: 50 } });
		const agent = agentOf(library, catchUpQuery);
		agent.addMessage({ id: "u1", role: "user", content: '/tool pick_color {"question": "favourite?"}' });
		const finished: Finished[] = [];
		const started: { metadata: { wheelhouse: { runId: string } } }[] = [];
		const subscriber = {
			onRunStartedEvent: (p: { event: (typeof started)[0] }) => void started.push(p.event),
			onRunFinishedEvent: (p: Finished) => void finished.push(p),
		};
		await agent.runAgent({ tools: [pickColor] }, subscriber);
		const call = agent.messages.findLast((m) => m.role === "assistant")?.toolCalls?.[0];
		expect(call?.function.name).toBe("pick_color");
		expect(JSON.parse(call?.function.arguments ?? "")).toEqual({ question: "favourite?" });
		expect(finished).toHaveLength(1);
		if (modern) {
			expect(finished[0]?.event.outcome).toEqual({ type: "success", pendingToolCallIds: [call?.id] });
			expect(finished[0]?.pendingToolCallIds).toEqual([call?.id]);
		} else {
			expect(finished[0]?.event.outcome).toBeUndefined();
		}

		// A client that lost its stream sees the pending call in the catch-up stream as it can read it.
		const late = agentOf(library, catchUpQuery, { threadId: agent.threadId });
		const caughtUp: Finished[] = [];
		await late.connectAgent({}, { onRunFinishedEvent: (p: Finished) => void caughtUp.push(p) });
		expect(late.messages.at(-1)?.toolCalls?.[0]?.id).toBe(call?.id);
		expect(caughtUp[0]?.event.outcome).toEqual(
			modern ? { type: "success", pendingToolCallIds: [call?.id] } : undefined,
		);

		agent.addMessage({ id: "t1", role: "tool", toolCallId: call?.id, content: "teal" });
		await agent.runAgent({ tools: [pickColor] }, subscriber);
		expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "Tool results: pick_color: teal" });
		expect(finished[1]?.event.outcome).toBeUndefined();
		// One Wheelhouse run answered both AG-UI runs.
		expect(started[1]?.metadata.wheelhouse.runId).toBe(started[0]?.metadata.wheelhouse.runId);
		expect(name).toBeTruthy();
	});

	it("a run aborted from elsewhere ends with RUN_FINISHED the client accepts", async () => {
		server = await startServer({ config: { apiKeys: [KEY], fauxDelayMs: 20 } });
		const agent = agentOf(library, catchUpQuery);
		agent.addMessage({ id: "u1", role: "user", content: LONG });
		let aborted: Promise<unknown> | undefined;
		const finished: Finished[] = [];
		await agent.runAgent(
			{},
			{
				onRunStartedEvent: ({ event }: { event: { metadata: { wheelhouse: { sessionId: string } } } }) => {
					const { sessionId } = event.metadata.wheelhouse;
					aborted = server.request("POST", `/v1/sessions/${sessionId}/abort`, { key: KEY });
				},
				onRunFinishedEvent: (p: Finished) => void finished.push(p),
			},
		);
		expect(await aborted).toMatchObject({ status: 200 });
		expect(finished).toHaveLength(1);
		expect(finished[0]?.event.outcome).toEqual(modern ? { type: "cancelled" } : undefined);
	});
});

describe("the protocol a request asks for", () => {
	it("refuses a protocolVersion that is not a version, naming the field", async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const body = {
			threadId: "t",
			runId: "r",
			protocolVersion: "newest",
			messages: [{ id: "u1", role: "user", content: "hi" }],
		};
		const run = await server.request("POST", "/agui/v1/run", { key: KEY, body });
		expect(run.status).toBe(400);
		expect(run.body.error.message).toContain("protocolVersion");
		const catchUp = await server.request("GET", "/agui/v1/threads/t/events?protocolVersion=newest", { key: KEY });
		expect(catchUp.status).toBe(400);
		expect(catchUp.body.error.message).toContain("protocolVersion");
	});
});
