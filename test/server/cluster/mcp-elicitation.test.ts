/**
 * An upstream MCP server's elicitation answered on a replica that does not run the session: two
 * replica processes on PostgreSQL + Redis, each with the fixture MCP server (a real child
 * process). Replica A runs the call that asks; replica B checks the answer against the requested
 * schema from the store (400 naming the field, still waiting), stores a fitting one and tells A,
 * whose MCP server gets it: the call completes with the content.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
	createSession,
	haveClusterServices,
	NO_CLUSTER_SERVICES,
	type Replica,
	testCluster,
} from "../../helpers/cluster.js";
import { json, stopAll } from "../../helpers/main-process.js";
import { openSse } from "../../helpers/sse.js";
import { fixtureCommand } from "../../tools/helpers.js";

const ok = await haveClusterServices();
const cluster = testCluster("mcp-elicitation");
const T = 90_000;

describe.skipIf(!ok)("cluster: an MCP server's elicitation answered on another replica", () => {
	let replicas: Replica[];
	let dir: string;
	beforeAll(async () => {
		dir = mkdtempSync(path.join(tmpdir(), "wh-elicit-cluster-"));
		const { command, args } = fixtureCommand();
		const config = path.join(dir, "config.json");
		writeFileSync(config, JSON.stringify({ tools: { mcpServers: { fx: { command, args, pingIntervalMs: 0 } } } }));
		replicas = await cluster.start(2, { env: { WHEELHOUSE_CONFIG: config } });
	}, T);
	afterAll(async () => {
		stopAll();
		await cluster.dropRedisKeys();
		rmSync(dir, { recursive: true, force: true });
	});

	it("validates on the replica it reaches and delivers the answer to the run", { timeout: T }, async () => {
		const [A, B] = replicas as [Replica, Replica];
		const id = await createSession(A);
		const watch = await openSse(`${A.url}/v1/sessions/${id}/events`);
		try {
			const prompt = await json(`${A.url}/v1/sessions/${id}/prompt`, "POST", { message: "/tool fx__ask {}" });
			expect(prompt.status).toBe(202);
			const requested = await watch.waitForType("elicitation_requested", 30_000);
			const { elicitationId, toolCallId } = requested.data;
			const onB = `${B.url}/v1/sessions/${id}/elicitations/${elicitationId}`;

			const wrong = await json(onB, "POST", { action: "accept", content: { name: "", age: 3 } });
			expect([wrong.status, wrong.body.error.code, wrong.body.error.message]).toEqual([
				400,
				"VALIDATION_FAILED",
				"body.content.name: must be at least 1 characters",
			]);
			expect((await json(`${B.url}/v1/sessions/${id}`)).body.pendingElicitations).toEqual([
				expect.objectContaining({ elicitationId, toolCallId }),
			]);

			const accepted = await json(onB, "POST", { action: "accept", content: { name: "Grace", age: 85 } });
			expect([accepted.status, accepted.body]).toEqual([200, { elicitationId, status: "accepted" }]);
			const end = await watch.waitFor((e) => e.event === "tool_execution_end", 30_000);
			expect(end.data).toMatchObject({ toolCallId, isError: false });
			expect(end.data.result.content[0].text).toBe('answer: {"action":"accept","content":{"name":"Grace","age":85}}');
			const resolved = watch.events.find((e) => e.event === "elicitation_resolved")!;
			expect(resolved.data.outcome).toEqual({ kind: "accepted", content: { name: "Grace", age: 85 } });

			// The replica that ran it remembers the answer: a second one is too late.
			const again = await json(`${A.url}/v1/sessions/${id}/elicitations/${elicitationId}`, "POST", {
				action: "decline",
			});
			expect([again.status, again.body.error.code]).toEqual([409, "ELICITATION_FINISHED"]);
		} finally {
			watch.close();
		}
	});

	it.skipIf(ok)(NO_CLUSTER_SERVICES, () => {});
});
