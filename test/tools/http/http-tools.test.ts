import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpTool, createHttpTools } from "../../../src/tools/http-tools.js";

const ENV = (name: string) => `$${"{"}${name}}`;

let server: Server;
let base: string;
const seen: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
let slowClosed: Promise<void>;
let markSlowClosed: () => void;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
	const chunks: Buffer[] = [];
	for await (const c of req) chunks.push(c as Buffer);
	seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
	const url = new URL(req.url!, "http://x");
	if (url.pathname === "/json") {
		res
			.writeHead(200, { "content-type": "application/json" })
			.end(JSON.stringify({ query: Object.fromEntries(url.searchParams) }));
	} else if (url.pathname === "/text") {
		res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end("plain text ✓");
	} else if (url.pathname === "/slow") {
		res.on("close", () => markSlowClosed());
		res.writeHead(200, { "content-type": "text/plain" });
		res.write("partial");
	} else if (url.pathname === "/big") {
		res.writeHead(200, { "content-type": "text/plain" });
		const chunk = Buffer.alloc(64 * 1024, "a");
		let sent = 0;
		const pump = () => {
			while (sent < 4 * 1024 * 1024 && !res.destroyed) {
				sent += chunk.length;
				if (!res.write(chunk)) return void res.once("drain", pump);
			}
			res.end();
		};
		pump();
	} else if (url.pathname === "/declared-big") {
		res.writeHead(200, { "content-type": "text/plain", "content-length": String(10_000_000) });
		res.write("x");
	} else if (url.pathname === "/fail") {
		res
			.writeHead(503, { "content-type": "application/json" })
			.end(JSON.stringify({ error: "upstream down", pad: "y".repeat(2000) }));
	} else if (url.pathname === "/redirect") {
		res.writeHead(302, { location: "http://example.com/" }).end();
	} else if (url.pathname === "/image") {
		res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
	} else {
		res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ path: req.url }));
	}
}

beforeAll(async () => {
	server = createServer((req, res) => void handle(req, res));
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
	server.closeAllConnections();
	await new Promise((resolve) => server.close(resolve));
});

const last = () => seen[seen.length - 1]!;

describe("HTTP tools", () => {
	it("GET: fills path placeholders URL-encoded and puts the other arguments in the query", async () => {
		const tool = createHttpTool({ name: "get_item", description: "d", url: `${base}/items/{id}?lang={lang}` });
		const result = await tool.execute("t1", { id: "a b/c?d#e", lang: "de&x=1", extra: 5 });
		expect(last().url).toBe("/items/a%20b%2Fc%3Fd%23e?lang=de%26x%3D1&extra=5");
		expect(result.details.json).toEqual({ path: "/items/a%20b%2Fc%3Fd%23e?lang=de%26x%3D1&extra=5" });
		expect(result.details.status).toBe(200);
		expect(tool.parameters).toEqual({
			type: "object",
			properties: { id: { type: "string" }, lang: { type: "string" } },
			required: ["id", "lang"],
		});
	});

	it("POST: sends the remaining arguments as JSON and headers with env secrets resolved at load", async () => {
		const tool = createHttpTool(
			{
				name: "create",
				description: "d",
				method: "POST",
				url: `${base}/orgs/{org}/things`,
				headers: { Authorization: `Bearer ${ENV("WH_TEST_HTTP_TOKEN")}` },
				parameters: { type: "object", properties: { org: { type: "string" }, title: { type: "string" } } },
			},
			{ env: { WH_TEST_HTTP_TOKEN: "tok-1" } },
		);
		const result = await tool.execute("t2", { org: "acme", title: "hello", tags: ["a"] });
		expect(last()).toMatchObject({ method: "POST", url: "/orgs/acme/things", body: '{"title":"hello","tags":["a"]}' });
		expect(last().headers.authorization).toBe("Bearer tok-1");
		expect(last().headers["content-type"]).toBe("application/json");
		expect(result.content).toEqual([{ type: "text", text: '{"path":"/orgs/acme/things"}' }]);
		expect(tool.origin).toEqual({ kind: "http", method: "POST", url: `${base}/orgs/{org}/things` });
	});

	it("returns text and image bodies", async () => {
		const text = await createHttpTool({ name: "t", description: "d", url: `${base}/text` }).execute("t3", {});
		expect(text.content).toEqual([{ type: "text", text: "plain text ✓" }]);
		const image = await createHttpTool({ name: "i", description: "d", url: `${base}/image` }).execute("t4", {});
		expect(image.content).toEqual([{ type: "image", data: "iVBORw==", mimeType: "image/png" }]);
	});

	it("throws on non-2xx with the status and a body excerpt", async () => {
		const call = createHttpTool({ name: "f", description: "d", url: `${base}/fail` }).execute("t5", {});
		await expect(call).rejects.toThrow(/^HTTP 503 from http:\/\/127\.0\.0\.1:\d+\/fail: \{"error":"upstream down"/);
		await expect(
			createHttpTool({ name: "f", description: "d", url: `${base}/fail` }).execute("t5b", {}),
		).rejects.toThrow(/y{100}…$/);
	});

	it("does not follow redirects", async () => {
		await expect(
			createHttpTool({ name: "r", description: "d", url: `${base}/redirect` }).execute("t6", {}),
		).rejects.toThrow("HTTP 302");
	});

	it("times out, closing the connection", async () => {
		slowClosed = new Promise((resolve) => {
			markSlowClosed = resolve;
		});
		const tool = createHttpTool({ name: "slow", description: "d", url: `${base}/slow`, timeoutMs: 150 });
		await expect(tool.execute("t7", {})).rejects.toThrow(
			/slow: request to http:\/\/127\.0\.0\.1:\d+\/slow timed out after 150 ms/,
		);
		await slowClosed;
	});

	it("aborts with the caller's signal", async () => {
		slowClosed = new Promise((resolve) => {
			markSlowClosed = resolve;
		});
		const controller = new AbortController();
		const tool = createHttpTool({ name: "slow", description: "d", url: `${base}/slow`, timeoutMs: 60_000 });
		const before = seen.filter((s) => s.url === "/slow").length;
		const call = tool.execute("t8", {}, controller.signal);
		// Abort once the server has the request, not after a guessed delay.
		await expect.poll(() => seen.filter((s) => s.url === "/slow").length).toBe(before + 1);
		controller.abort(new Error("stop now"));
		await expect(call).rejects.toThrow("stop now");
		await slowClosed;
	});

	it("cuts off a streamed body past maxResponseBytes, and refuses a declared oversize body", async () => {
		const big = createHttpTool({ name: "big", description: "d", url: `${base}/big`, maxResponseBytes: 100_000 });
		await expect(big.execute("t9", {})).rejects.toThrow("Response larger than the limit of 100000 bytes");
		const declared = createHttpTool({
			name: "d",
			description: "d",
			url: `${base}/declared-big`,
			maxResponseBytes: 1000,
		});
		await expect(declared.execute("t10", {})).rejects.toThrow(
			"Response of 10000000 bytes exceeds the limit of 1000 bytes",
		);
	});

	it("pins the host: no placeholders in the authority, and no path escapes", async () => {
		expect(() => createHttpTool({ name: "h", description: "d", url: "http://{host}/x" })).toThrow(
			"placeholders are not allowed in the host",
		);
		expect(() => createHttpTool({ name: "h", description: "d", url: "http://api.{domain}.com/x" })).toThrow(
			"placeholders are not allowed in the host",
		);
		expect(() => createHttpTool({ name: "h", description: "d", url: "ftp://x/y" })).toThrow("absolute http(s) URL");
		const tool = createHttpTool({ name: "p", description: "d", url: `${base}/items/{id}` });
		await expect(tool.execute("t11", { id: ".." })).rejects.toThrow('may not be ".."');
		await tool.execute("t12", { id: "@evil.example.com" });
		expect(last().url).toBe("/items/%40evil.example.com");
		await tool.execute("t13", { id: "//evil.example.com/x" });
		expect(last().url).toBe("/items/%2F%2Fevil.example.com%2Fx");
	});

	it("fails the config load naming an unset env variable or a duplicate name", () => {
		expect(() =>
			createHttpTools(
				[{ name: "a", description: "d", url: `${base}/x`, headers: { "X-Key": ENV("WH_UNSET_VAR") } }],
				{},
			),
		).toThrow("tools.httpTools[0].headers.X-Key: environment variable WH_UNSET_VAR is not set");
		expect(() =>
			createHttpTools([
				{ name: "a", description: "d", url: `${base}/x` },
				{ name: "a", description: "d", url: `${base}/y` },
			]),
		).toThrow('tools.httpTools[1].name: duplicate tool name "a"');
	});
});
