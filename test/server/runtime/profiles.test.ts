/**
 * Agent profiles in the server config: checked at startup (a bad one stops it, naming the field),
 * and `profile` of `POST /v1/sessions`, whose explicit fields win over the profile's.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../../src/server/http/app.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const KEY = "test-key";
let server: TestServer;
afterEach(async () => {
	await server?.close();
});

function build(profiles: unknown) {
	return buildApp({ env: {}, config: { logLevel: "silent", profiles } });
}

describe("profiles in the config", () => {
	it("a bad profile stops startup, naming the field", async () => {
		await expect(build({ support: { model: "x/y" } })).rejects.toThrow(
			'Invalid configuration: profiles.support.model: Unknown model "x/y"',
		);
		await expect(build({ "team/support": { model: "faux/echo" } })).rejects.toThrow(
			'Invalid configuration: profiles.team/support: a profile name has 1 to 128 characters, no "/"',
		);
		await expect(build({ support: { systemPrompt: "hi" } })).rejects.toThrow(
			"Invalid configuration: profiles.support.model:",
		);
		await expect(build({ support: { model: "faux/echo", thinkingLevel: "huge" } })).rejects.toThrow(
			"Invalid configuration: profiles.support.thinkingLevel:",
		);
		await expect(build({ support: { model: "faux/echo", temperature: 1 } })).rejects.toThrow(
			"Invalid configuration: profiles.support.temperature:",
		);
		await expect(build([{ model: "faux/echo" }])).rejects.toThrow("Invalid configuration: profiles: must be an object");
	});

	it("a profile's tools follow the rules of a session's: exact names must exist, patterns may match none yet", async () => {
		await expect(build({ support: { model: "faux/echo", tools: ["calculate", "nope"] } })).rejects.toThrow(
			'Invalid configuration: profiles.support.tools: unknown tool "nope"; the server\'s tools are get_current_time, calculate',
		);
		await expect(build({ support: { model: "faux/echo", tools: ["a*b"] } })).rejects.toThrow(
			'Invalid configuration: profiles.support.tools: "a*b": "*" may only end a pattern',
		);
		const app = await build({ support: { model: "faux/echo", tools: ["calculate", "files__*"] } });
		expect(app.wheelhouse.profiles.get("support")?.tools).toEqual(["calculate", "files__*"]);
		await app.close();
	});

	it("docs/configuration.md's example profile is valid (with a key for its provider)", async () => {
		const readme = readFileSync(
			path.join(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/configuration.md"),
			"utf8",
		);
		const section = readme.slice(readme.indexOf("## Agent profiles"));
		const example = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)?.[1] ?? "null");
		const app = await buildApp({
			env: { ANTHROPIC_API_KEY: "sk-test" },
			// Its approval rule names a tool of the example's MCP server (down here: named by its prefix).
			config: { logLevel: "silent", tools: example.tools, profiles: example.profiles },
		});
		expect([...app.wheelhouse.profiles.keys()]).toEqual(["support"]);
		await app.close();
		await expect(build(example.profiles)).rejects.toThrow(
			'Invalid configuration: profiles.support.model: Model "anthropic/claude-sonnet-4-5" needs an API key',
		);
	});
});

describe("POST /v1/sessions with a profile", () => {
	const profiles = {
		support: {
			model: "faux/echo",
			systemPrompt: "You are the support agent.",
			tools: ["calculate"],
			thinkingLevel: "low",
			budget: { maxTurnsPerRun: 3 },
			metadata: { team: "support", tier: "1" },
		},
	};

	it("starts from the profile; the fields given win, metadata is merged", async () => {
		server = await startServer({ config: { apiKeys: [KEY], profiles } });
		const plain = await server.request("POST", "/v1/sessions", { key: KEY, body: { profile: "support" } });
		expect(plain.status).toBe(201);
		expect(plain.body).toMatchObject({
			model: "faux/echo",
			systemPrompt: "You are the support agent.",
			tools: ["calculate"],
			thinkingLevel: "low",
			budget: { maxTurnsPerRun: 3 },
			metadata: { team: "support", tier: "1", profile: "support" },
		});

		const given = await server.request("POST", "/v1/sessions", {
			key: KEY,
			body: { profile: "support", systemPrompt: "Another prompt.", tools: [], metadata: { tier: "2" } },
		});
		expect(given.status).toBe(201);
		expect(given.body).toMatchObject({
			systemPrompt: "Another prompt.",
			tools: [],
			thinkingLevel: "low",
			metadata: { team: "support", tier: "2", profile: "support" },
		});
	});

	it("an unknown profile is 400 UNKNOWN_PROFILE naming the profiles there are; a name with / is refused", async () => {
		server = await startServer({ config: { apiKeys: [KEY], profiles } });
		const unknown = await server.request("POST", "/v1/sessions", { key: KEY, body: { profile: "sales" } });
		expect(unknown.status).toBe(400);
		expect(unknown.body.error.code).toBe("UNKNOWN_PROFILE");
		expect(unknown.body.error.message).toBe('body.profile: no agent profile "sales"; the server has "support".');
		const slash = await server.request("POST", "/v1/sessions", { key: KEY, body: { profile: "a/b" } });
		expect(slash.status).toBe(400);
		expect(slash.body.error.code).toBe("VALIDATION_FAILED");
	});
});
