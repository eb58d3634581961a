/**
 * The liveness and readiness probes.
 */
import type { FastifyPluginAsync } from "fastify";
import { routePlugin } from "../plugins.js";
import { Health } from "../schemas.js";

/**
 * `/healthz` (the process is up) and `/readyz` (it accepts work: not shutting down, store open and,
 * for PostgreSQL, reachable: a probe read goes to the database).
 * Both are open without an API key: probes carry none. Orchestrators probe them every few seconds:
 * their requests are logged from `warn` only, so the log shows what clients do.
 */
export const healthRoutes: FastifyPluginAsync = routePlugin("wheelhouse-health", async (app) => {
	app.get(
		"/healthz",
		{
			logLevel: "warn",
			config: { public: true },
			schema: { tags: ["health"], summary: "Liveness", response: { 200: Health } },
		},
		async function healthz() {
			return { status: "ok" };
		},
	);

	app.get(
		"/readyz",
		{
			logLevel: "warn",
			config: { public: true },
			schema: { tags: ["health"], summary: "Readiness", response: { 200: Health, 503: Health } },
		},
		async function readyz(_request, reply) {
			const ctx = app.wheelhouse;
			if (ctx.isShuttingDown()) return reply.code(503).send({ status: "shutting_down" });
			const store = ctx.sessions.store;
			const unavailable: string[] = [];
			try {
				await store.getSession("__readyz_probe__");
			} catch {
				// Names the part that is down: `postgres` for the PostgreSQL store (it may come back).
				unavailable.push(store.kind === "postgres" ? "postgres" : "store");
			}
			if (ctx.cluster && !ctx.cluster.ready) unavailable.push("redis");
			if (unavailable.length > 0) {
				const status = unavailable[0] === "redis" ? "redis_unavailable" : "store_unavailable";
				return reply.code(503).send({ status, unavailable });
			}
			return { status: "ready", store: ctx.sessions.store.kind };
		},
	);
});
