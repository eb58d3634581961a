/**
 * The app's plugins declare what they need (src/server/http/plugins.ts): a route plugin or facade
 * registered on an instance without the server context or auth is refused at startup, naming
 * the missing plugin, instead of failing on its first request. And the real app registers every
 * plugin in an order that satisfies them all (it starts and serves).
 */
import Fastify from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { aguiFacade } from "../../../src/server/facades/agui/routes.js";
import { openaiFacade } from "../../../src/server/facades/openai/routes.js";
import { buildApp } from "../../../src/server/http/app.js";
import { authPlugin } from "../../../src/server/http/auth.js";
import { docsRoutes } from "../../../src/server/http/docs.js";
import { eventRoutes } from "../../../src/server/http/routes/events.js";
import { sessionRoutes } from "../../../src/server/http/routes/sessions.js";
import { createMemoryStore } from "../../../src/store/memory.js";

const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
	for (const app of apps.splice(0)) await app.close();
});

function bare() {
	const app = Fastify({ logger: false });
	apps.push(app);
	return app;
}

describe("declared plugin dependencies", () => {
	it.each([
		["sessions", sessionRoutes],
		["events", eventRoutes],
	])("the %s routes are refused without the server context", async (name, plugin) => {
		const app = bare();
		app.register(plugin as never);
		await expect(app.ready()).rejects.toThrow(new RegExp(`'wheelhouse' required by 'wheelhouse-${name}'`));
	});

	it("a facade is refused without auth's request decorators, and without the plugins by name", async () => {
		for (const [name, facade] of [
			["openai", openaiFacade],
			["agui", aguiFacade],
		] as const) {
			const app = bare();
			app.decorate("wheelhouse", {} as never);
			app.register(facade as never, { interactions: {} } as never);
			await expect(app.ready()).rejects.toThrow(new RegExp(`'ownerId' required by 'wheelhouse-${name}'`));
			// The decorators alone, made by hand, are not enough: the plugins themselves are named.
			const forged = bare();
			forged.decorate("wheelhouse", {} as never);
			forged.decorateRequest("ownerId", null);
			forged.decorateRequest("principal", null);
			forged.register(facade as never, { interactions: {} } as never);
			await expect(forged.ready()).rejects.toThrow(/wheelhouse-context/);
		}
	});

	it("auth needs the server context registered before it", async () => {
		const app = bare();
		app.register(authPlugin, { apiKeys: [], streamTokenTtlMs: 60_000, identity: undefined as never });
		await expect(app.ready()).rejects.toThrow(/wheelhouse-context/);
	});

	it("the API reference needs the OpenAPI collector", async () => {
		const app = bare();
		app.register(docsRoutes);
		await expect(app.ready()).rejects.toThrow(/'openApiDocument' required by 'wheelhouse-docs'/);
	});

	it("the real app satisfies every declaration: it starts with the docs on and serves a route of each kind", async () => {
		const app = await buildApp({ store: createMemoryStore(), config: { logLevel: "silent", docs: "on" } as never });
		apps.push(app);
		await app.ready();
		const created = await app.inject({ method: "POST", url: "/v1/sessions", payload: {} });
		expect(created.statusCode).toBe(201);
		expect((await app.inject({ method: "GET", url: "/openai/v1/models" })).statusCode).toBe(200);
		expect((await app.inject({ method: "GET", url: "/openapi.json" })).statusCode).toBe(200);
	});
});
