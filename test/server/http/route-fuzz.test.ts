/**
 * Fuzzes every operation of `openapi.yaml` against a real server with API keys: random and
 * mutated path parameters, query strings, headers and bodies, with a valid key, a wrong one or
 * none. No answer may be a 5xx, and every error with a body must be the envelope with a code of
 * the table and that code's status. Seeded (`FUZZ_SEED` replays a run; the seed is in every
 * failure), bounded by time and by count.
 *
 * The facades (Chat Completions, Responses, AG-UI, pi's proxy) take open objects, so the schema
 * sampler seldom reaches their request mapping: a second pass sends them bodies shaped as their
 * clients send them (facade-fuzz.ts), mutated and broken, and reads each stream to its end.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Dispatcher, request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { OPENAI_ERRORS } from "../../../src/server/facades/openai/errors.js";
import { ERRORS, type ErrorCode } from "../../../src/server/http/errors.js";
import { facadeCall } from "../../helpers/facade-fuzz.js";
import {
	bodyText,
	createRandom,
	NASTY_STRINGS,
	NASTY_TEXT,
	type Random,
	SchemaSampler,
} from "../../helpers/openapi-fuzz.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { startStrictProvider } from "../../helpers/strict-provider.js";

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);
/** At least MIN_REQUESTS (the same sequence on every machine), then more until BUDGET_MS, at most MAX_REQUESTS. */
const MIN_REQUESTS = Number(process.env.FUZZ_MIN_REQUESTS ?? 200);
const BUDGET_MS = Number(process.env.FUZZ_MS ?? 3000);
const MAX_REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 1500);
const KEY = "fuzz-key-0123456789";
/** The facades' pass: as many requests, a stream read for at most STREAM_MS. */
const MIN_FACADE_REQUESTS = Number(process.env.FUZZ_MIN_FACADE_REQUESTS ?? 300);
const STREAM_MS = 2000;

const doc = parse(readFileSync(resolve(import.meta.dirname, "../../../openapi.yaml"), "utf8"));

interface Operation {
	method: string;
	path: string;
	spec: Record<string, any>;
}

const operations: Operation[] = Object.entries<Record<string, any>>(doc.paths).flatMap(([path, ops]) =>
	Object.entries(ops).map(([method, spec]) => ({ method: method.toUpperCase(), path, spec })),
);

interface FuzzRequest {
	method: string;
	path: string;
	headers: Record<string, string>;
	body?: string;
}

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

/** Percent-encodes text, lone surrogates included (as U+FFFD, what a client would send). */
function encode(text: string): string {
	return encodeURIComponent(text.replace(/[\ud800-\udfff]/gu, "\ufffd"));
}

function pathValue(random: Random, ids: Record<string, string[]>, name: string): string {
	const real = ids[name] ?? [];
	if (real.length > 0 && random.chance(0.5)) return random.pick(real);
	switch (random.int(6)) {
		case 0:
			return random.pick(["%zz", "%", "%E0%A4%A", "%2F", "%00", "a%20b", "..", "%2e%2e"]);
		case 1:
			return "a".repeat(random.pick([199, 200, 201, 1000, 5000]));
		default:
			return encode(random.pick(NASTY_STRINGS)) || "x";
	}
}

function queryString(random: Random, params: Record<string, any>[]): string {
	const parts: string[] = [];
	for (const param of params) {
		if (param.in !== "query" || random.chance(0.3)) continue;
		const repeat = random.chance(0.1) ? 2 : 1;
		for (let i = 0; i < repeat; i++) parts.push(`${param.name}=${encode(random.pick(NASTY_TEXT))}`);
	}
	if (random.chance(0.1)) parts.push(`${random.pick(["unknown", "__proto__", "a[b]"])}=${random.pick(["1", ""])}`);
	if (random.chance(0.05)) parts.push("%zz=%zz");
	return parts.length > 0 ? `?${parts.join("&")}` : "";
}

function headersFor(random: Random, op: Operation): Record<string, string> {
	const headers: Record<string, string> = {};
	const auth = random.int(10);
	if (auth < 8) headers.authorization = `Bearer ${KEY}`;
	else if (auth === 8)
		headers.authorization = random.pick(["Bearer wrong-key-012345", "Basic x", "Bearer", "bearer  "]);
	if (random.chance(0.3)) headers.accept = random.pick(["text/event-stream", "application/json", "*/*", "text/html"]);
	if (random.chance(0.15)) headers["last-event-id"] = random.pick(NASTY_TEXT.filter((t) => !/[\r\n\0]/.test(t)));
	if (random.chance(0.05)) headers["x-request-id"] = random.pick(["abc", "x".repeat(300), "é"]);
	if (op.spec.requestBody || random.chance(0.2)) {
		const type = random.int(10);
		if (type < 7) headers["content-type"] = "application/json";
		else if (type === 7)
			headers["content-type"] = random.pick([
				"text/plain",
				"application/x-www-form-urlencoded",
				"multipart/form-data; boundary=x",
				"application/xml",
				"???",
				"application/json; charset=latin1",
				"application/json;",
			]);
		// else: no content type at all
	}
	return headers;
}

function generate(random: Random, sampler: SchemaSampler, ids: Record<string, string[]>): FuzzRequest {
	const op = random.pick(operations);
	const params: Record<string, any>[] = op.spec.parameters ?? [];
	const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => pathValue(random, ids, name));
	let method = op.method;
	if (random.chance(0.08)) method = random.pick(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
	const headers = headersFor(random, op);
	let body: string | undefined;
	const schema = op.spec.requestBody?.content?.["application/json"]?.schema;
	if (method !== "GET" && method !== "HEAD" && (schema || random.chance(0.2))) {
		body = bodyText(random, sampler, schema ? sampler.valid(schema) : sampler.any());
	}
	return { method, path: `${path}${queryString(random, params)}`, headers, ...(body !== undefined ? { body } : {}) };
}

/**
 * The error body's code and message: the envelope, or from the `/api/stream` route the flat shape
 * pi's streamProxy reads (`{ error: message, code }`, see docs/facades.md "pi's streamProxy"; the router's
 * answers for that path, a 405, are the envelope).
 */
function errorOf(body: any, path: string): { code: unknown; message: unknown } {
	if (path.startsWith("/api/stream") && typeof body?.error === "string")
		return { code: body.code, message: body.error };
	return { code: body?.error?.code, message: body?.error?.message };
}

/** What is wrong with a response to `path`, or undefined. */
function check(res: { status: number; contentType: string; text: string }, path: string): string | undefined {
	if (res.status >= 500) return `status ${res.status}: ${res.text.slice(0, 300)}`;
	if (res.status < 400 || res.text === "") return undefined;
	let body: any;
	try {
		body = JSON.parse(res.text);
	} catch {
		return `non-JSON error body (${res.contentType}): ${res.text.slice(0, 200)}`;
	}
	const error = errorOf(body, path);
	// The OpenAI facade answers a few errors with OpenAI's own code and status (an unknown model).
	const openaiOwn = path.startsWith("/openai/v1")
		? Object.values(OPENAI_ERRORS).find((e) => e.code === error.code)
		: undefined;
	if (openaiOwn && typeof error.message === "string") {
		return openaiOwn.status === res.status
			? undefined
			: `${openaiOwn.code} answered with ${res.status}, not ${openaiOwn.status}`;
	}
	const code = error.code as ErrorCode;
	if (typeof error.message !== "string" || typeof code !== "string" || !(code in ERRORS)) {
		return `not the envelope: ${res.text.slice(0, 300)}`;
	}
	if (ERRORS[code].status !== res.status)
		return `${code} answered with ${res.status}, the table says ${ERRORS[code].status}`;
	return undefined;
}

async function send(url: string, req: FuzzRequest) {
	const res: Dispatcher.ResponseData = await request(`${url}${req.path}`, {
		method: req.method as Dispatcher.HttpMethod,
		headers: req.headers,
		body: req.body,
		headersTimeout: 5000,
		bodyTimeout: 5000,
	});
	const contentType = String(res.headers["content-type"] ?? "");
	if (contentType.startsWith("text/event-stream")) {
		// An open stream: the status and headers are the answer; do not wait for its end.
		res.body.destroy();
		return { status: res.statusCode, contentType, text: "" };
	}
	return { status: res.statusCode, contentType, text: await res.body.text() };
}

/** Sends a request and reads its answer; a stream up to its end or `streamMs`, whichever comes first. */
async function sendAndRead(url: string, req: FuzzRequest, streamMs: number) {
	const res: Dispatcher.ResponseData = await request(`${url}${req.path}`, {
		method: req.method as Dispatcher.HttpMethod,
		headers: req.headers,
		body: req.body,
		headersTimeout: 5000,
		bodyTimeout: 5000,
	});
	const contentType = String(res.headers["content-type"] ?? "");
	if (!contentType.startsWith("text/event-stream")) {
		return { status: res.statusCode, contentType, text: await res.body.text() };
	}
	const timer = setTimeout(() => res.body.destroy(), streamMs);
	try {
		for await (const _chunk of res.body) {
			// read to the end: the run the request started is what is under test
		}
	} catch {
		// destroyed at the time limit
	} finally {
		clearTimeout(timer);
	}
	return { status: res.statusCode, contentType, text: "" };
}

describe("route fuzz (openapi.yaml)", () => {
	it("no 5xx, and every error is the envelope with the table's status", { timeout: BUDGET_MS + 120_000 }, async () => {
		server = await startServer({ config: { apiKeys: [KEY] } });
		const random = createRandom(SEED);
		const sampler = new SchemaSampler(random, doc);
		const ids: Record<string, string[]> = { id: [], toolCallId: ["call_1", "x"] };
		for (let i = 0; i < 3; i++) {
			const created = await server.request("POST", "/v1/sessions", {
				key: KEY,
				body: { messages: [{ role: "user", content: "hi", timestamp: 1 }] },
			});
			ids.id.push(created.body.id);
		}
		expect(operations.length).toBeGreaterThan(10);

		const failures: string[] = [];
		const started = Date.now();
		let sent = 0;
		const more = () => sent < MIN_REQUESTS || (sent < MAX_REQUESTS && Date.now() - started < BUDGET_MS);
		while (more() && failures.length < 20) {
			const req = generate(random, sampler, ids);
			sent++;
			let res: Awaited<ReturnType<typeof send>>;
			try {
				res = await send(server.url, req);
			} catch (err) {
				const error = err as { code?: string; message?: string };
				// undici refuses some inputs itself (invalid header values); those never reach the server.
				if (error.code === "UND_ERR_INVALID_ARG") continue;
				failures.push(`#${sent} ${req.method} ${req.path.slice(0, 120)}: client error ${error.code} ${error.message}`);
				continue;
			}
			const problem = check(res, req.path);
			if (problem) {
				failures.push(
					`#${sent} ${req.method} ${req.path.slice(0, 120)} ${JSON.stringify(req.headers).slice(0, 200)} body=${JSON.stringify(req.body?.slice(0, 200))}: ${problem}`,
				);
			}
			if (res.status === 201 && req.path.startsWith("/v1/sessions") && !req.path.slice(12).includes("/")) {
				const id = JSON.parse(res.text).id;
				if (typeof id === "string") ids.id.push(id);
			}
		}
		expect(failures, `FUZZ_SEED=${SEED} (${sent} requests): replay with FUZZ_SEED=${SEED}`).toEqual([]);
	});

	it("the facades, with bodies as their clients send them: no 5xx, every error in the route's shape", {
		timeout: BUDGET_MS + 180_000,
	}, async () => {
		const provider = await startStrictProvider();
		// Runs left waiting for a client tool's result are aborted at close after the grace period.
		server = await startServer({
			env: { STRICT_API_KEY: "strict-key" },
			config: {
				apiKeys: [KEY],
				shutdownGraceMs: 50,
				models: [{ provider: "strict", id: "m", baseUrl: provider.baseUrl, apiKeyEnv: "STRICT_API_KEY" }],
			},
		});
		const random = createRandom(SEED);
		const sampler = new SchemaSampler(random, doc);
		const failures: string[] = [];
		const statuses = new Map<string, Map<number, number>>();
		let sent = 0;
		while (sent < MIN_FACADE_REQUESTS && failures.length < 20) {
			const { path, body } = facadeCall(random, sampler);
			const headers: Record<string, string> = { "content-type": "application/json" };
			if (random.int(20) > 0) headers.authorization = `Bearer ${KEY}`;
			const req: FuzzRequest = { method: "POST", path, headers, body };
			sent++;
			let res: Awaited<ReturnType<typeof sendAndRead>>;
			try {
				res = await sendAndRead(server.url, req, STREAM_MS);
			} catch (err) {
				const error = err as { code?: string; message?: string };
				failures.push(`#${sent} POST ${path}: client error ${error.code} ${error.message} body=${body.slice(0, 300)}`);
				continue;
			}
			const byStatus = statuses.get(path) ?? new Map<number, number>();
			byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
			statuses.set(path, byStatus);
			const problem = check(res, path);
			if (problem) failures.push(`#${sent} POST ${path} body=${body.slice(0, 600)}: ${problem}`);
			// What the server let through to a provider that refuses it: a 502, or a failed stream, for the client.
			for (const refusal of provider.refusals.splice(0)) {
				failures.push(`#${sent} POST ${path} body=${body.slice(0, 600)}: the provider refused: ${refusal}`);
			}
		}
		await server.close();
		await provider.close();
		expect(failures, `FUZZ_SEED=${SEED} (${sent} requests): replay with FUZZ_SEED=${SEED}`).toEqual([]);
		// Each facade was reached, and past its validation: some requests ran (200), some were refused (4xx).
		for (const path of ["/openai/v1/chat/completions", "/openai/v1/responses", "/agui/v1/run", "/api/stream"]) {
			const byStatus = statuses.get(path);
			expect(byStatus?.get(200), `${path}: ${JSON.stringify([...(byStatus ?? [])])}`).toBeGreaterThan(5);
			expect([...(byStatus?.keys() ?? [])].some((status) => status >= 400)).toBe(true);
		}
	});
});
