/**
 * A config stored between a session's load and its run's claim (another replica's PATCH, whose
 * control message found the session not yet running here and was ignored) is the config the run
 * starts with: the claim says the stored config version, and the session takes the newer one in.
 * The interleaving is forced on the real store: its `startRun` first lets the change be stored.
 */
import { afterEach, describe, expect, it } from "vitest";
import { streamScriptedTurn } from "../../../src/ai/providers/faux.js";
import { registerApiProvider, unregisterApiProvider } from "../../../src/ai/registry.js";
import type { Model } from "../../../src/ai/types.js";
import { echoTurn } from "../../../src/server/runtime/echo-model.js";
import { createMemoryStore } from "../../../src/store/memory.js";
import type { SessionConfig, SessionStore } from "../../../src/store/types.js";
import { startServer, type TestServer } from "../../helpers/server.js";
import { promptSse } from "../../helpers/sse.js";

let server: TestServer;
afterEach(async () => {
	unregisterApiProvider("test-recorder");
	await server?.close();
});

function recorderModel(id: string): Model<any> {
	return {
		id,
		name: id,
		api: "test-recorder",
		provider: "test",
		baseUrl: "http://localhost:0",
		reasoning: true,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 1000,
		maxTokens: 1000,
	};
}

/** The real store, whose next `startRun` stores `patch` first, as another replica's PATCH would. */
function storePatchingBeforeClaim(): {
	store: SessionStore;
	patchBeforeNextClaim(patch: Partial<SessionConfig>): void;
} {
	const real = createMemoryStore();
	let pending: Partial<SessionConfig> | undefined;
	const store = new Proxy(real, {
		get(target, prop, receiver) {
			if (prop === "startRun") {
				return async (...args: Parameters<SessionStore["startRun"]>) => {
					const patch = pending;
					pending = undefined;
					if (patch) await target.updateSession(args[0], patch, Date.now() + 1000);
					return target.startRun(...args);
				};
			}
			const value = Reflect.get(target, prop, receiver);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
	return {
		store,
		patchBeforeNextClaim: (patch) => {
			pending = patch;
		},
	};
}

describe("a config stored between the session's load and the run's claim", () => {
	it("is the config the run's model calls use, and the session's", async () => {
		const seen: { model: string; systemPrompt?: string }[] = [];
		registerApiProvider("test-recorder", (model, context, options) => {
			seen.push({ model: model.id, systemPrompt: context.systemPrompt });
			return streamScriptedTurn(model, echoTurn(context), { signal: options?.signal });
		});
		const racing = storePatchingBeforeClaim();
		server = await startServer({ store: racing.store, models: [recorderModel("one"), recorderModel("two")] });
		const id = (await server.request("POST", "/v1/sessions", { body: { model: "test/one", systemPrompt: "A" } })).body
			.id;

		racing.patchBeforeNextClaim({ model: "test/two", systemPrompt: "B" });
		const first = await promptSse(server.url, id, { message: "hello" });
		await first.waitForEnd();
		expect(seen).toEqual([{ model: "two", systemPrompt: "B" }]);
		expect((await server.request("GET", `/v1/sessions/${id}`)).body).toMatchObject({
			model: "test/two",
			systemPrompt: "B",
		});

		// Without a change in between, the next run keeps it (and reads nothing more).
		const second = await promptSse(server.url, id, { message: "again" });
		await second.waitForEnd();
		expect(seen.at(-1)).toEqual({ model: "two", systemPrompt: "B" });
	});
});
