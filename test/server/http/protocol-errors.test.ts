import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ERRORS, type ErrorCode } from "../../../src/server/http/errors.js";
import { startServer, type TestServer } from "../../helpers/server.js";

let server: TestServer;
afterEach(async () => {
	await server?.close();
});

interface RawResponse {
	status: number;
	headers: Record<string, string>;
	body: string;
}

/** Sends raw bytes on a fresh connection and reads until the server closes it (or the first response is complete). */
function sendRaw(url: string, bytes: string): Promise<RawResponse> {
	const { port } = new URL(url);
	return new Promise((resolve, reject) => {
		const socket = net.connect(Number(port), "127.0.0.1");
		let data = "";
		const finish = () => {
			socket.destroy();
			const [head, ...rest] = data.split("\r\n\r\n");
			const [statusLine, ...lines] = head.split("\r\n");
			const headers: Record<string, string> = {};
			for (const line of lines) {
				const i = line.indexOf(":");
				headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
			}
			resolve({ status: Number(statusLine.split(" ")[1]), headers, body: rest.join("\r\n\r\n") });
		};
		socket.setEncoding("utf8");
		socket.on("data", (chunk) => {
			data += chunk;
			const end = data.indexOf("\r\n\r\n");
			const length = /content-length:\s*(\d+)/i.exec(data.slice(0, end));
			if (end >= 0 && length && Buffer.byteLength(data.slice(end + 4)) >= Number(length[1])) finish();
		});
		socket.on("end", finish);
		socket.on("error", reject);
		socket.write(bytes);
	});
}

function expectEnvelope(res: { status: number; body: unknown }, code: ErrorCode) {
	const body = (typeof res.body === "string" ? JSON.parse(res.body) : res.body) as {
		error: { code: string; message: string };
	};
	expect(body.error.code).toBe(code);
	expect(typeof body.error.message).toBe("string");
	expect(res.status).toBe(ERRORS[code].status);
}

describe("errors from the router and the HTTP layer are the envelope", () => {
	it("a path with bad percent-encoding is 400 MALFORMED_REQUEST", async () => {
		server = await startServer();
		for (const path of ["/v1/sessions/%zz", "/v1/sessions/%zz/events", "/v1/sessions/%E0%A4%A"]) {
			const res = await server.request("GET", path);
			expectEnvelope(res, "MALFORMED_REQUEST");
		}
	});

	it("ids up to the 200 characters the spec allows reach the route; longer ones get the envelope", async () => {
		server = await startServer();
		const atLimit = await server.request("GET", `/v1/sessions/${"a".repeat(200)}`);
		expectEnvelope(atLimit, "SESSION_NOT_FOUND");
		const events = await server.request("GET", `/v1/sessions/${"a".repeat(200)}/events`);
		expectEnvelope(events, "SESSION_NOT_FOUND");
		for (const length of [201, 1000, 5000]) {
			const res = await server.request("GET", `/v1/sessions/${"a".repeat(length)}`);
			expectEnvelope(res, "VALIDATION_FAILED");
			expect(res.body.error.message).toContain("200");
		}
	});

	it("a method the path does not have is 405 METHOD_NOT_ALLOWED with Allow", async () => {
		server = await startServer();
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const put = await server.request("PUT", `/v1/sessions/${id}`, { body: {} });
		expectEnvelope(put, "METHOD_NOT_ALLOWED");
		expect(put.headers.get("allow")?.split(", ").sort()).toEqual(["DELETE", "GET", "HEAD", "PATCH"]);
		const getPrompt = await server.request("GET", `/v1/sessions/${id}/prompt`);
		expectEnvelope(getPrompt, "METHOD_NOT_ALLOWED");
		expect(getPrompt.headers.get("allow")).toBe("POST");
		const deleteList = await server.request("DELETE", "/v1/sessions");
		expectEnvelope(deleteList, "METHOD_NOT_ALLOWED");
		expect(deleteList.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
		// A path that does not exist at all stays 404.
		expectEnvelope(await server.request("GET", "/v1/nothing-here"), "NOT_FOUND");
		expectEnvelope(await server.request("PUT", "/v1/nothing-here"), "NOT_FOUND");
	});

	it("the 405 waits for authentication like any other /v1 answer", async () => {
		server = await startServer({ config: { apiKeys: ["key-0123456789"] } });
		expectEnvelope(await server.request("PUT", "/v1/sessions"), "UNAUTHORIZED");
		expectEnvelope(await server.request("PUT", "/v1/sessions", { key: "key-0123456789" }), "METHOD_NOT_ALLOWED");
	});

	it("malformed HTTP gets the envelope and Connection: close", async () => {
		server = await startServer();
		for (const bytes of [
			"GARBAGE\r\n\r\n",
			"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
			"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
		]) {
			const res = await sendRaw(server.url, bytes);
			expectEnvelope(res, "MALFORMED_REQUEST");
			expect(res.headers.connection).toBe("close");
			expect(res.headers["content-type"]).toMatch(/^application\/json/);
		}
	});

	it("headers over the limit are 431 HEADERS_TOO_LARGE in the envelope", async () => {
		server = await startServer();
		const res = await sendRaw(server.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
		expectEnvelope(res, "HEADERS_TOO_LARGE");
		expect(res.headers.connection).toBe("close");
	});

	it("an HTTP/1.1 request without Host is 400 MALFORMED_REQUEST in the envelope; HTTP/1.0 needs none", async () => {
		server = await startServer();
		const res = await sendRaw(server.url, "GET /v1/sessions HTTP/1.1\r\n\r\n");
		expectEnvelope(res, "MALFORMED_REQUEST");
		expect(JSON.parse(res.body).error.message).toContain("Host");
		expect(res.headers.connection).toBe("close");
		const old = await sendRaw(server.url, "GET /healthz HTTP/1.0\r\n\r\n");
		expect(old.status).toBe(200);
	});
});

describe("request bodies", () => {
	it("POST /v1/sessions without a body (no content type, or an empty JSON body) creates a session", async () => {
		server = await startServer();
		const bare = await fetch(`${server.url}/v1/sessions`, { method: "POST" });
		expect(bare.status).toBe(201);
		const raw = await sendRaw(server.url, "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
		expect(raw.status).toBe(201);
		const emptyJson = await fetch(`${server.url}/v1/sessions`, {
			method: "POST",
			headers: { "content-type": "application/json" },
		});
		expect(emptyJson.status).toBe(201);
		// A body is still required where a field is.
		const id = ((await bare.json()) as { id: string }).id;
		const noMessage = await fetch(`${server.url}/v1/sessions/${id}/prompt`, { method: "POST" });
		expectEnvelope({ status: noMessage.status, body: await noMessage.json() }, "VALIDATION_FAILED");
	});

	it("a text/plain body is 415 UNSUPPORTED_MEDIA_TYPE", async () => {
		server = await startServer();
		for (const type of ["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded"]) {
			const res = await server.request("POST", "/v1/sessions", { body: "{}", headers: { "content-type": type } });
			expectEnvelope(res, "UNSUPPORTED_MEDIA_TYPE");
		}
		const json = await server.request("POST", "/v1/sessions", {
			body: "{}",
			headers: { "content-type": "application/json; charset=utf-8" },
		});
		expect(json.status).toBe(201);
	});

	it("an invalid enum value lists the allowed values", async () => {
		server = await startServer();
		const res = await server.request("POST", "/v1/sessions", { body: { thinkingLevel: "max" } });
		expectEnvelope(res, "VALIDATION_FAILED");
		expect(res.body.error.message).toBe("body.thinkingLevel must be one of: off, minimal, low, medium, high, xhigh");
		const id = (await server.request("POST", "/v1/sessions", { body: {} })).body.id;
		const ifBusy = await server.request("POST", `/v1/sessions/${id}/prompt`, {
			body: { message: "x", ifBusy: "later" },
		});
		expect(ifBusy.body.error.message).toBe("body.ifBusy must be one of: reject, steer, followUp, interrupt");
		const kind = await server.request("DELETE", `/v1/sessions/${id}/queue?kind=all`);
		expect(kind.body.error.message).toBe("query.kind must be one of: steer, followUp");
	});
});
