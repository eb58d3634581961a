/**
 * The catalogue routes: the models and the server tools a session can use.
 */
import type { FastifyPluginAsync } from "fastify";
import { isIdempotentTool } from "../../../tools/index.js";
import { routePlugin } from "../plugins.js";
import { ModelList, responses, ToolList } from "../schemas.js";

/** `GET /v1/models` and `GET /v1/tools`. */
export const catalogRoutes: FastifyPluginAsync = routePlugin("wheelhouse-catalog", async (app) => {
	app.get(
		"/v1/models",
		{
			schema: {
				tags: ["catalog"],
				summary: "Models sessions can use (faux/echo is marked standIn: a scripted stand-in, not an LLM)",
				response: responses({ 200: ModelList }),
			},
		},
		async function listModels() {
			const { catalog } = app.wheelhouse;
			return { defaultModel: catalog.defaultModel, models: catalog.list() };
		},
	);

	app.get(
		"/v1/tools",
		{
			schema: {
				tags: ["catalog"],
				summary: "Server tools sessions can enable",
				response: responses({ 200: ToolList }),
			},
		},
		async function listTools() {
			const { sessions, toolOrigins } = app.wheelhouse;
			return {
				tools: [...sessions.tools.values()].map((tool) => ({
					name: tool.name,
					label: tool.label,
					description: tool.description,
					parameters: tool.parameters as Record<string, unknown>,
					origin: toolOrigins.get(tool.name) ?? "library",
					idempotent: isIdempotentTool(tool),
					...(tool.executionMode ? { executionMode: tool.executionMode } : {}),
				})),
			};
		},
	);
});
