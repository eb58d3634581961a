// Starts the real entry (src/main.ts through tsx's loader) once: seconds on a busy machine.
/**
 * Secrets in the configuration never reach the log, and `${ENV}` references in a custom model's
 * headers are resolved at startup. The real process runs with a config file that holds secrets in
 * every place one can sit (model headers, provider keys, HTTP tool headers, the env of an MCP stdio
 * server, the headers of an MCP HTTP server, API keys), talks to a local fake Chat Completions
 * server that records the headers it receives, and its whole output is searched for the secrets.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig, redactConfig } from "../../../src/server/config/config.js";
import { redactSecrets } from "../../../src/server/config/redact.js";
import { buildApp } from "../../../src/server/http/app.js";
import { fixtureCommand } from "../../tools/helpers.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const SECRETS = {
	modelHeader: "literal-model-header-secret-1",
	modelHeaderEnv: "env-model-header-secret-2",
	modelApiKey: "fakeprov-api-key-secret-3",
	providerKey: "sk-provider-key-secret-4",
	httpToolHeader: "http-tool-header-secret-5",
	mcpEnv: "mcp-stdio-env-secret-6",
	mcpHeader: "mcp-http-header-secret-7",
	apiKey: "server-api-key-secret-8",
	baseUrlPassword: "base-url-password-secret-9",
};

/** A Chat Completions server that answers "pong" and records each request's headers. */
async function startFakeProvider(): Promise<{ server: Server; port: number; requests: IncomingHttpHeaders[] }> {
	const requests: IncomingHttpHeaders[] = [];
	const server = createServer((req, res) => {
		requests.push(req.headers);
		req.resume();
		req.on("end", () => {
			const chunk = (delta: object, finish: string | null) =>
				`data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "m1", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.end(`${chunk({ role: "assistant", content: "pong" }, null)}${chunk({}, "stop")}data: [DONE]\n\n`);
		});
	});
	server.listen(0, "127.0.0.1");
	await once(server, "listening");
	return { server, port: (server.address() as { port: number }).port, requests };
}

async function freePort(): Promise<number> {
	const server = createNetServer().listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	server.close();
	return port;
}

function writeConfig(dir: string, providerPort: number): string {
	const file = path.join(dir, "wheelhouse.json");
	const config = {
		providerKeys: { openai: SECRETS.providerKey },
		models: [
			{
				provider: "fakeprov",
				id: "m1",
				baseUrl: `http://gateway:${SECRETS.baseUrlPassword}@127.0.0.1:${providerPort}/v1`,
				apiKeyEnv: "FAKEPROV_API_KEY",
				// biome-ignore lint/suspicious/noTemplateCurlyInString: a config-file reference, resolved by the server
				headers: { "X-Gateway-Key": SECRETS.modelHeader, "X-Env-Key": "Bearer ${MODEL_HEADER_TOKEN}" },
			},
		],
		tools: {
			httpTools: [
				{
					name: "get_weather",
					description: "Current weather",
					method: "GET",
					url: "http://127.0.0.1:9/weather",
					headers: { Authorization: `Bearer ${SECRETS.httpToolHeader}` },
				},
			],
			mcpServers: {
				fx: { ...fixtureCommand(), env: { FIXTURE_TOKEN: SECRETS.mcpEnv }, pingIntervalMs: 0 },
				remote: { url: "http://127.0.0.1:9/mcp", headers: { Authorization: `Bearer ${SECRETS.mcpHeader}` } },
			},
		},
	};
	writeFileSync(file, JSON.stringify(config));
	return file;
}

async function startProcess(env: Record<string, string>): Promise<{ child: ChildProcess; output: () => string }> {
	const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
		cwd: repoRoot,
		env: { PATH: process.env.PATH, HOST: "127.0.0.1", WHEELHOUSE_STORE: "memory", ...env },
	});
	cleanups.push(() => {
		if (child.exitCode === null) child.kill("SIGKILL");
	});
	let output = "";
	await new Promise<void>((resolve, reject) => {
		const onData = (chunk: Buffer) => {
			output += chunk.toString();
			if (/listening on/i.test(output)) resolve();
		};
		child.stdout!.on("data", onData);
		child.stderr!.on("data", onData);
		child.once("exit", (code) => reject(new Error(`server exited with ${code} before listening:\n${output}`)));
	});
	return { child, output: () => output };
}

describe("secrets in the configuration", () => {
	it("never reach the log; an environment reference in a model's headers reaches the provider", async () => {
		const provider = await startFakeProvider();
		cleanups.push(() => void provider.server.close());
		const dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-secrets-"));
		cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
		const port = await freePort();
		const server = await startProcess({
			PORT: String(port),
			WHEELHOUSE_CONFIG: writeConfig(dir, provider.port),
			WHEELHOUSE_API_KEYS: SECRETS.apiKey,
			MODEL_HEADER_TOKEN: SECRETS.modelHeaderEnv,
			FAKEPROV_API_KEY: SECRETS.modelApiKey,
			LOG_LEVEL: "debug",
		});
		const url = `http://127.0.0.1:${port}`;
		const auth = { authorization: `Bearer ${SECRETS.apiKey}`, "content-type": "application/json" };

		const created = await fetch(`${url}/v1/sessions`, {
			method: "POST",
			headers: auth,
			body: JSON.stringify({ model: "fakeprov/m1" }),
		});
		expect(created.status).toBe(201);
		const { id } = (await created.json()) as { id: string };
		const run = await fetch(`${url}/v1/sessions/${id}/prompt`, {
			method: "POST",
			headers: { ...auth, accept: "text/event-stream" },
			body: JSON.stringify({ message: "ping" }),
		});
		const stream = await run.text();
		expect(stream).toContain("event: agent_end");
		expect(stream).toContain("pong");

		expect(provider.requests).toHaveLength(1);
		expect(provider.requests[0]!["x-env-key"]).toBe(`Bearer ${SECRETS.modelHeaderEnv}`);
		expect(provider.requests[0]!["x-gateway-key"]).toBe(SECRETS.modelHeader);

		const exited = once(server.child, "exit");
		server.child.kill("SIGTERM");
		await exited;
		const log = server.output();
		expect(log).toMatch(/"msg":"configuration"/);
		// The configuration is still there to read, with the secrets out of it.
		const configLine = log.split("\n").find((line) => line.includes('"msg":"configuration"'))!;
		expect(configLine).toContain("fakeprov");
		expect(configLine).toContain("X-Gateway-Key");
		expect(configLine).toContain("[redacted]");
		for (const [where, secret] of Object.entries(SECRETS)) expect(log, `${where} in the log`).not.toContain(secret);
	}, 60_000);

	it("a reference to an unset environment variable in a model's headers stops startup naming the field", async () => {
		await expect(
			buildApp({
				env: {},
				config: {
					logLevel: "silent",
					models: [
						{
							provider: "fakeprov",
							id: "m2",
							baseUrl: "http://127.0.0.1:9/v1",
							// biome-ignore lint/suspicious/noTemplateCurlyInString: a config-file reference, resolved by the server
							headers: { Authorization: "Bearer ${NOT_SET_ANYWHERE}" },
						},
					],
				},
			}),
		).rejects.toThrow(
			"Invalid configuration: models[0].headers.Authorization: environment variable NOT_SET_ANYWHERE is not set",
		);
	});

	it("redaction goes by structure and keeps what is not a secret", () => {
		const redacted = redactSecrets({
			models: [{ id: "m", maxTokens: 100, apiKeyEnv: "GATEWAY_KEY", headers: { "X-Anything": "s1" } }],
			nested: { deeper: [{ clientSecret: "s2", accessToken: "s3", db_password: "s4", env: { ANY: "s5" } }] },
			url: "https://user:s6@host/path?api_key=s7&page=2",
			streamTokenTtlMs: 1000,
		});
		expect(JSON.stringify(redacted)).not.toMatch(/s[1-7]\b/);
		expect(redacted).toMatchObject({
			models: [{ id: "m", maxTokens: 100, apiKeyEnv: "GATEWAY_KEY", headers: { "X-Anything": "[redacted]" } }],
			streamTokenTtlMs: 1000,
		});
		expect((redacted as { url: string }).url).toContain("page=2");
	});

	it("webhook secrets are redacted from the logged configuration, the rest of the section kept", () => {
		const config = loadConfig(
			{
				WHEELHOUSE_WEBHOOK_URL: "https://hooks.example.com/a",
				WHEELHOUSE_WEBHOOK_SECRET: "whsec_env-webhook-secret-10",
			},
			{
				webhooks: {
					endpoints: [
						{ url: "https://hooks.example.com/b", secret: "whsec_file-webhook-secret-11", events: ["run.failed"] },
					],
					maxAttempts: 3,
				},
			},
		);
		const logged = JSON.stringify(redactConfig(config));
		expect(logged).not.toMatch(/webhook-secret-1[01]/);
		expect(logged).toContain("https://hooks.example.com/a");
		expect(logged).toContain('"events":["run.failed"]');
		expect(logged).toContain('"maxAttempts":3');
	});
});
