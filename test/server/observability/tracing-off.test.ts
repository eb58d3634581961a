/**
 * Tracing costs nothing when off: without `OTEL_*` settings (or with them saying off) the server
 * serves a run and no OpenTelemetry SDK or exporter module is loaded; an endpoint turns it on;
 * a bad setting stops startup naming the variable. This file imports no SDK module itself (the
 * module cache is this test process's).
 */
import { once } from "node:events";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../../src/server/http/app.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

const require = createRequire(import.meta.url);

/** The SDK and exporter modules loaded in this process so far. */
function sdkModules(): string[] {
	return Object.keys(require.cache).filter((path) =>
		/@opentelemetry[\\/](sdk-trace|resources|exporter-trace|otlp-)/.test(path),
	);
}

const servers: TestServer[] = [];
afterEach(async () => {
	for (const server of servers.splice(0)) await server.close();
});

async function serveOneRun(env: Record<string, string>): Promise<TestServer> {
	const server = await startServer({ env });
	servers.push(server);
	const created = await server.request("POST", "/v1/sessions", { body: {} });
	const run = await promptSse(server.url, created.body.id, { message: "hello" });
	await run.waitForEnd();
	expect(run.events.at(-1)?.event).toBe("agent_end");
	return server;
}

describe("tracing off", () => {
	it("loads no SDK module without OTEL_* settings, with OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true", async () => {
		const endpoint = "http://127.0.0.1:9/";
		const envs: Record<string, string>[] = [
			{},
			{ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: "none" },
			{ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: "true" },
		];
		for (const env of envs) {
			const server = await serveOneRun(env);
			expect(server.app.wheelhouse.tracing).toBeUndefined();
			expect(sdkModules()).toEqual([]);
		}
	});

	it("an OTLP endpoint turns tracing on and loads the SDK (after the cases above)", async () => {
		const receiver = createServer((req, res) => {
			req.resume();
			req.on("end", () => res.writeHead(200, { "content-type": "application/x-protobuf" }).end());
		});
		receiver.listen(0, "127.0.0.1");
		await once(receiver, "listening");
		try {
			const { port } = receiver.address() as { port: number };
			const server = await serveOneRun({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
			expect(server.app.wheelhouse.tracing).toBeDefined();
			expect(sdkModules().some((path) => /sdk-trace-base/.test(path))).toBe(true);
			expect(sdkModules().some((path) => /exporter-trace-otlp-proto/.test(path))).toBe(true);
			await server.close();
		} finally {
			receiver.close();
		}
	});

	it("a bad OTEL_* value stops startup naming the variable", async () => {
		const cases: [Record<string, string>, RegExp][] = [
			[{ OTEL_TRACES_EXPORTER: "zipkin" }, /OTEL_TRACES_EXPORTER: unsupported exporter "zipkin"/],
			[
				{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
				/OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol "grpc"/,
			],
			[{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, /OTEL_EXPORTER_OTLP_ENDPOINT: .*http:\/\/ or https:\/\//],
			[
				{ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "yes" },
				/OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT/,
			],
			[
				{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_EXPORTER_OTLP_HEADERS: "novalue" },
				/OTEL_EXPORTER_OTLP_HEADERS: "novalue" is not key=value/,
			],
		];
		for (const [env, message] of cases) {
			await expect(buildApp({ env, config: { logLevel: "silent" } })).rejects.toThrow(message);
		}
	});
});
