/**
 * An error quotes a bad value, it does not echo it: a 1 MB `model` or a 1.29 MB tool name gives a
 * small 400 that still names the field, on every route that quotes them — the native API, the
 * OpenAI-compatible routes, AG-UI and pi's proxy, whatever their error shape.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boundMessage, MAX_QUOTED_CHARS } from "../../../src/server/http/errors.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "error-echo-key-1";
const MODEL = `faux/${"x".repeat(1_048_576)}`;
const TOOL = "t".repeat(1_290_000);
/** What a bounded error body may be: the message, the code, a few quoted values. */
const SMALL = 2_000;
let server: TestServer;

beforeAll(async () => {
	server = await startServer({ config: { apiKeys: [KEY] } });
});
afterAll(async () => {
	await server.close();
});

async function post(path: string, body: unknown) {
	const res = await fetch(`${server.url}${path}`, {
		method: "POST",
		headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	return { status: res.status, text: await res.text() };
}

/** The error's message in whichever shape the route answers. */
function messageOf(text: string): string {
	const body = JSON.parse(text);
	return typeof body.error === "string" ? body.error : body.error.message;
}

const hi = [{ id: "u1", role: "user", content: "hi" }];
const cases: [string, string, unknown, string][] = [
	["a 1 MB model, /v1", "/v1/sessions", { model: MODEL }, "body.model"],
	[
		"a 1 MB model, Chat Completions",
		"/openai/v1/chat/completions",
		{ model: MODEL, messages: [{ role: "user", content: "hi" }] },
		"model",
	],
	["a 1 MB model, Responses", "/openai/v1/responses", { model: MODEL, input: "hi" }, "model"],
	[
		"a 1 MB model, AG-UI",
		"/agui/v1/run",
		{ threadId: "t1", runId: "r", messages: hi, forwardedProps: { wheelhouse: { model: MODEL } } },
		"body.forwardedProps.wheelhouse.model",
	],
	["a 1.29 MB tool name, /v1", "/v1/sessions", { tools: [TOOL] }, "body.tools"],
	[
		"a 1.29 MB tool name, AG-UI",
		"/agui/v1/run",
		{ threadId: "t2", runId: "r", messages: hi, forwardedProps: { wheelhouse: { tools: [TOOL] } } },
		"body.forwardedProps.wheelhouse.tools",
	],
	["a 1.29 MB field name", "/v1/sessions", { [TOOL]: 1 }, "body has an unknown field"],
];

describe("errors quote at most a few hundred characters of a value", () => {
	it.each(cases)("%s", async (_name, path, body, field) => {
		const res = await post(path, body);
		expect(res.status).toBeGreaterThanOrEqual(400);
		expect(res.status).toBeLessThan(500);
		expect(res.text.length).toBeLessThan(SMALL);
		const message = messageOf(res.text);
		expect(message).toContain(field);
		// The value is quoted: its beginning, and how long it was.
		expect(message).toMatch(/(x{150,}|t{150,})… \(\d+ characters\)/);
	});

	it("leaves an ordinary message as it is, and cuts each long value to its first characters", () => {
		const ordinary = 'body.tools: unknown tool "nope"; see GET /v1/tools.';
		expect(boundMessage(ordinary)).toBe(ordinary);
		const long = `a "${"y".repeat(500)}" and ${"z".repeat(300)} end`;
		expect(boundMessage(long)).toBe(
			`a "${"y".repeat(MAX_QUOTED_CHARS)}… (500 characters)" and ${"z".repeat(MAX_QUOTED_CHARS)}… (300 characters) end`,
		);
		expect(boundMessage("w ".repeat(100_000)).length).toBeLessThan(4_100);
	});
});
