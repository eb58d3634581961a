/**
 * `WheelhouseClient` has a method for every `/v1` operation of openapi.yaml: the table below maps
 * each operationId to the calls that serve it, a `/v1` route added without an entry fails here, and
 * each call, sent to the real server, is a request of that operation's method and path which the
 * server routes (its answer is the route's own, not 404 `NOT_FOUND` or 405). Every public method
 * of the client is named in the table, so none is left unchecked.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { WheelhouseClient } from "../../src/client/index.js";
import { repoRoot } from "../helpers/main-process.js";
import { startServer, type TestServer } from "../helpers/server.js";

/** Ids of nothing: every call gets the route's own refusal (404 session not found…), not a routing one. */
const S = "ses_none";
const SCH = "sch_none";
type Call = (client: WheelhouseClient) => unknown;

/** operationId → the client calls that send it. */
const OPERATIONS: Record<string, Call[]> = {
	getModels: [(c) => c.models()],
	getTools: [(c) => c.tools()],
	getToolsMcpServers: [(c) => c.mcpServers()],
	getUsage: [(c) => c.usage()],
	postSessions: [(c) => c.createSession({ model: "nope/none" })],
	getSessions: [(c) => c.listSessions({ limit: 1 }), (c) => c.allSessions(1)],
	getSessionsById: [(c) => c.getSession(S)],
	patchSessionsById: [(c) => c.updateSession(S, {})],
	deleteSessionsById: [(c) => c.deleteSession(S)],
	getSessionsByIdMessages: [(c) => c.messages(S)],
	putSessionsByIdToolDeclarations: [(c) => c.setToolDeclarations(S, {})],
	postSessionsByIdPrompt: [(c) => c.prompt(S, "hi"), (c) => c.streamPrompt(S, "hi")],
	postSessionsByIdContinue: [(c) => c.continue(S), (c) => c.streamContinue(S)],
	postSessionsByIdSteer: [(c) => c.steer(S, "hi")],
	postSessionsByIdFollowUp: [(c) => c.followUp(S, "hi")],
	deleteSessionsByIdQueue: [(c) => c.clearQueue(S)],
	postSessionsByIdAbort: [(c) => c.abort(S)],
	postSessionsByIdCompact: [(c) => c.compact(S)],
	postSessionsByIdFork: [(c) => c.forkSession(S)],
	postSessionsByIdRewind: [(c) => c.rewindSession(S, "wh-0")],
	postSessionsByIdRegenerate: [(c) => c.regenerate(S)],
	patchSessionsByIdMessagesById: [(c) => c.editMessage(S, "wh-0", { content: "hi" })],
	getSessionsByIdBranches: [(c) => c.listBranches(S)],
	postSessionsByIdApprovalsById: [(c) => c.approve(S, "call_none", { approve: true })],
	postSessionsByIdToolResultsById: [(c) => c.toolResult(S, "call_none", { content: "x" })],
	postSessionsByIdElicitationsById: [(c) => c.answerElicitation(S, "eli_none", { action: "decline" })],
	getSessionsByIdEvents: [(c) => c.events(S)],
	postSessionsByIdStreamToken: [(c) => c.streamToken(S)],
	postTokens: [(c) => c.clientToken(S, ["read"])],
	getMe: [(c) => c.me()],
	postSchedules: [(c) => c.createSchedule({} as never)],
	getSchedules: [(c) => c.listSchedules()],
	getSchedulesById: [(c) => c.getSchedule(SCH)],
	patchSchedulesById: [(c) => c.updateSchedule(SCH, {})],
	deleteSchedulesById: [(c) => c.deleteSchedule(SCH)],
	postSchedulesByIdPause: [(c) => c.pauseSchedule(SCH)],
	postSchedulesByIdResume: [(c) => c.resumeSchedule(SCH)],
	postSchedulesByIdRunNow: [(c) => c.runScheduleNow(SCH)],
	getSchedulesByIdFires: [(c) => c.scheduleFires(SCH)],
};

interface Operation {
	id: string;
	method: string;
	path: string;
}

/** Every operation under `/v1` in openapi.yaml. */
function v1Operations(): Operation[] {
	const doc = parse(readFileSync(path.join(repoRoot, "openapi.yaml"), "utf8")) as {
		paths: Record<string, Record<string, { operationId?: string }>>;
	};
	const operations: Operation[] = [];
	for (const [route, item] of Object.entries(doc.paths)) {
		if (!route.startsWith("/v1/")) continue;
		for (const method of ["get", "post", "put", "patch", "delete"]) {
			const operation = item[method];
			if (!operation) continue;
			expect(operation.operationId, `${method} ${route} has an operationId`).toBeTypeOf("string");
			operations.push({ id: operation.operationId!, method: method.toUpperCase(), path: route });
		}
	}
	return operations;
}

/** What the client sent and what the server answered, per request. */
interface Exchange {
	method: string;
	pathname: string;
	status: number;
	code?: string;
}

let server: TestServer;
let exchanges: Exchange[] = [];
let client: WheelhouseClient;

beforeAll(async () => {
	server = await startServer();
	client = new WheelhouseClient({
		baseUrl: server.url,
		retries: 0,
		fetch: async (input, init) => {
			const response = await fetch(input, init);
			const exchange: Exchange = {
				method: init?.method ?? "GET",
				pathname: new URL(String(input)).pathname,
				status: response.status,
			};
			if (response.headers.get("content-type")?.includes("application/json")) {
				exchange.code = ((await response.clone().json()) as { error?: { code?: string } }).error?.code;
			}
			exchanges.push(exchange);
			return response;
		},
	});
});

afterAll(async () => {
	await server?.close();
});

/** Runs a call to its end: a promise settles, a stream is read up to its first event; errors are the point. */
async function settle(result: unknown): Promise<void> {
	try {
		if (result && typeof result === "object" && Symbol.asyncIterator in result) {
			for await (const _ of result as AsyncIterable<unknown>) break;
		} else await result;
	} catch {
		// The route's refusal (a session that does not exist…) is expected; the request is what counts.
	}
}

/** `/v1/sessions/{id}/messages/{messageId}` as a pattern of the paths that match it. */
function pathPattern(template: string): RegExp {
	const source = template
		.split(/\{[^}]+\}/)
		.map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
		.join("[^/]+");
	return new RegExp(`^${source}$`);
}

describe("WheelhouseClient covers the /v1 operations of openapi.yaml", () => {
	it("has a client call for every /v1 operation, and no entry for an operation that is gone", () => {
		const operations = v1Operations();
		expect(operations.length).toBeGreaterThan(30);
		const ids = operations.map((o) => o.id);
		const missing = ids.filter((id) => !(id in OPERATIONS));
		expect(missing, "add a WheelhouseClient method for each, and its entry in OPERATIONS").toEqual([]);
		expect(Object.keys(OPERATIONS).filter((id) => !ids.includes(id))).toEqual([]);
	});

	it("each call sends its operation's method and path, and the server routes it", { timeout: 60_000 }, async () => {
		const problems: string[] = [];
		for (const operation of v1Operations()) {
			const pattern = pathPattern(operation.path);
			for (const call of OPERATIONS[operation.id] ?? []) {
				exchanges = [];
				await settle(call(client));
				const where = `${operation.id} (${call.toString()})`;
				if (exchanges.length === 0) problems.push(`${where}: sent nothing`);
				for (const sent of exchanges) {
					if (sent.method !== operation.method || !pattern.test(sent.pathname))
						problems.push(`${where}: sent ${sent.method} ${sent.pathname}, not ${operation.method} ${operation.path}`);
					else if (sent.status === 405 || sent.code === "NOT_FOUND")
						problems.push(`${where}: the server has no route for ${sent.method} ${sent.pathname}`);
				}
			}
		}
		expect(problems).toEqual([]);
	});

	it("names every public method of the client in the table", () => {
		const methods = Object.getOwnPropertyNames(WheelhouseClient.prototype).filter((name) => name !== "constructor");
		const calls = Object.values(OPERATIONS)
			.flat()
			.map((call) => call.toString())
			.join("\n");
		expect(methods.filter((name) => !calls.includes(`.${name}(`))).toEqual([]);
	});
});
