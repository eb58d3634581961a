import { afterEach, describe, expect, it } from "vitest";
import { createGateTool, type GateTool } from "../../helpers/gate-tool.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { openSse, promptSse } from "../../helpers/sse.js";

let server: TestServer;
let gate: GateTool;
afterEach(async () => {
	gate?.release();
	await server?.close();
});

async function busySession() {
	gate = createGateTool();
	server = await startServer({ tools: [gate.tool] });
	const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
	const first = await promptSse(server.url, id, { message: "/tool wait_for_gate {}" });
	await gate.started();
	return { id, first };
}

describe("ifBusy", () => {
	it("reject (the default) answers 409 AGENT_BUSY and leaves the run alone", async () => {
		const { id, first } = await busySession();
		const res = await server.request("POST", `/v1/sessions/${id}/prompt`, { body: { message: "again" } });
		expect(res.status).toBe(409);
		expect(res.body.error.code).toBe("AGENT_BUSY");
		const explicit = await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: { message: "again", ifBusy: "reject" },
		});
		expect(explicit.status).toBe(409);
		gate.release();
		await first.waitForEnd();
		expect(first.events.at(-1)!.data.messages.at(-1).stopReason).toBe("stop");
	});

	it("steer and followUp queue the prompt as that kind (202)", async () => {
		const { id, first } = await busySession();
		const steer = await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: { message: "s", ifBusy: "steer" },
		});
		expect(steer.status).toBe(202);
		expect(steer.body).toMatchObject({ status: "queued", queue: "steer", idle: false });
		const fu = await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: { message: "f", ifBusy: "followUp" },
		});
		expect(fu.body).toMatchObject({ status: "queued", queue: "followUp" });
		gate.release();
		await first.waitForEnd();
		const users = first.events
			.filter((e) => e.event === "message_start" && e.data.message.role === "user")
			.map((e) => e.data.message.content[0].text);
		expect(users).toEqual(["/tool wait_for_gate {}", "s", "f"]);
	});

	it("interrupt aborts the active run (which ends with its agent_end) and then starts the new prompt", async () => {
		const { id, first } = await busySession();
		const events = await openSse(`${server.url}/v1/sessions/${id}/events`);
		await events.waitForType("session_snapshot");
		const second = await promptSse(server.url, id, { message: "new direction", ifBusy: "interrupt" });
		await first.waitForEnd();
		const firstEnd = first.events.at(-1)!;
		expect(firstEnd.event).toBe("agent_end");
		expect(gate.aborted).toBe(1);
		await second.waitForEnd();
		expect(second.types()[0]).toBe("agent_start");
		expect(second.events[0].id).toBeGreaterThan(firstEnd.id!);
		expect(second.events.at(-1)!.data.messages.at(-1).content[0].text).toBe("new direction");
		// On the session stream: the first run's agent_end precedes the second's agent_start.
		await events.waitFor((e) => e.event === "agent_end" && e.id === second.events.at(-1)!.id);
		const starts = events.events
			.filter((e) => e.event === "agent_start" || e.event === "agent_end")
			.map((e) => e.event);
		expect(starts).toEqual(["agent_end", "agent_start", "agent_end"]);
		events.close();
	});
});
