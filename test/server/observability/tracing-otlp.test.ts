/**
 * Spans leave over OTLP/HTTP, configured only by the standard `OTEL_*` variables, to a local
 * receiver (a node:http server standing in for a collector): protobuf by default, JSON with
 * `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`, with the configured headers and service name; the
 * spans still queued are exported when the server closes. Sampling follows the SDK's own
 * variables (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`), read from the process environment
 * as the server process (src/main.ts) has them.
 */
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

interface Received {
	path: string;
	headers: IncomingHttpHeaders;
	body: Buffer;
}

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
	vi.unstubAllEnvs();
	for (const step of cleanup.splice(0).reverse()) await step();
});

/** A collector stand-in that keeps every request and answers 200. */
async function startReceiver(): Promise<{ url: string; received: Received[] }> {
	const received: Received[] = [];
	const server: Server = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", (chunk: Buffer) => chunks.push(chunk));
		req.on("end", () => {
			received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) });
			const json = req.headers["content-type"] === "application/json";
			res
				.writeHead(200, { "content-type": json ? "application/json" : "application/x-protobuf" })
				.end(json ? "{}" : "");
		});
	});
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	cleanup.push(() => new Promise((resolve) => server.close(() => resolve())));
	const { port } = server.address() as { port: number };
	return { url: `http://127.0.0.1:${port}`, received };
}

/**
 * A server on `env` that serves one prompt with a tool call, then `more` requests, then closes
 * (flushing its spans).
 */
async function runAndClose(env: Record<string, string>, more?: (server: TestServer) => Promise<void>): Promise<void> {
	const server: TestServer = await startServer({ env });
	cleanup.push(() => server.close());
	const created = await server.request("POST", "/v1/sessions", { body: {} });
	const run = await promptSse(server.url, created.body.id, { message: '/tool calculate {"expression": "6 * 7"}' });
	await run.waitForEnd();
	await more?.(server);
	await server.close();
}

/** The names of the spans in OTLP/JSON export requests. */
function spanNames(received: Received[]): string[] {
	const names: string[] = [];
	for (const request of received) {
		for (const resourceSpans of JSON.parse(request.body.toString("utf8")).resourceSpans) {
			for (const scope of resourceSpans.scopeSpans)
				names.push(...scope.spans.map((span: { name: string }) => span.name));
		}
	}
	return names.sort();
}

/** Every span of {@link runAndClose}'s session and prompt. */
const ALL_SPANS = [
	"POST /v1/sessions",
	"POST /v1/sessions/:id/prompt",
	"chat echo",
	"chat echo",
	"execute_tool calculate",
	"invoke_agent",
].sort();

describe("tracing over OTLP/HTTP", () => {
	it("exports protobuf to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces with the service name and headers", async () => {
		const receiver = await startReceiver();
		await runAndClose({
			OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`,
			OTEL_SERVICE_NAME: "wheelhouse-otlp-proto",
			OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=abc%20def",
		});
		expect(receiver.received.length).toBeGreaterThan(0);
		const all = Buffer.concat(receiver.received.map((r) => r.body));
		for (const request of receiver.received) {
			expect(request.path).toBe("/v1/traces");
			expect(request.headers["content-type"]).toBe("application/x-protobuf");
			expect(request.headers["x-collector-key"]).toBe("abc def");
		}
		for (const text of ["wheelhouse-otlp-proto", "invoke_agent", "chat echo", "execute_tool calculate"]) {
			expect(all.includes(Buffer.from(text))).toBe(true);
		}
	});

	it("exports JSON with http/json to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, parents intact", async () => {
		const receiver = await startReceiver();
		await runAndClose({
			OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/collector/traces`,
			OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
			OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test,service.name=ignored-for-OTEL_SERVICE_NAME",
			OTEL_SERVICE_NAME: "wheelhouse-otlp-json",
		});
		expect(receiver.received.length).toBeGreaterThan(0);
		const spans: { name: string; spanId: string; parentSpanId?: string }[] = [];
		for (const request of receiver.received) {
			expect(request.path).toBe("/collector/traces");
			expect(request.headers["content-type"]).toBe("application/json");
			const body = JSON.parse(request.body.toString("utf8"));
			for (const resourceSpans of body.resourceSpans) {
				const attributes = Object.fromEntries(
					resourceSpans.resource.attributes.map((a: { key: string; value: { stringValue?: string } }) => [
						a.key,
						a.value.stringValue,
					]),
				);
				expect(attributes["service.name"]).toBe("wheelhouse-otlp-json");
				expect(attributes["deployment.environment.name"]).toBe("test");
				for (const scope of resourceSpans.scopeSpans) {
					expect(scope.scope.name).toBe("wheelhouse");
					spans.push(...scope.spans);
				}
			}
		}
		const byName = (name: string) => spans.filter((span) => span.name === name);
		const [request] = byName("POST /v1/sessions/:id/prompt");
		const [agent] = byName("invoke_agent");
		expect(agent.parentSpanId).toBe(request.spanId);
		expect(byName("chat echo").map((span) => span.parentSpanId)).toEqual([agent.spanId, agent.spanId]);
		expect(byName("execute_tool calculate")[0].parentSpanId).toBe(agent.spanId);
	});
});

describe("sampling by the SDK's variables", () => {
	it("without OTEL_TRACES_SAMPLER every span is exported", async () => {
		const receiver = await startReceiver();
		await runAndClose({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" });
		expect(spanNames(receiver.received)).toEqual(ALL_SPANS);
	});

	it("parentbased_traceidratio with ratio 0 exports no span of its own traces, but follows a sampled caller", async () => {
		vi.stubEnv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio");
		vi.stubEnv("OTEL_TRACES_SAMPLER_ARG", "0");
		const receiver = await startReceiver();
		await runAndClose(
			{ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
			async (server) => {
				const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
				expect((await server.request("GET", "/v1/sessions", { headers: { traceparent } })).status).toBe(200);
			},
		);
		expect(spanNames(receiver.received)).toEqual(["GET /v1/sessions"]);
	});

	it("parentbased_traceidratio with ratio 1 exports every span", async () => {
		vi.stubEnv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio");
		vi.stubEnv("OTEL_TRACES_SAMPLER_ARG", "1");
		const receiver = await startReceiver();
		await runAndClose({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" });
		expect(spanNames(receiver.received)).toEqual(ALL_SPANS);
	});
});
