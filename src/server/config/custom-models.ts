/**
 * The config file's `models` section: custom models (`CustomModelConfig[]` of src/ai/models.ts)
 * registered at startup, with `${NAME}` references in their header values resolved from the
 * environment, as HTTP tools and MCP servers resolve theirs — so a gateway key need not be
 * written into the file. A missing variable or a bad entry is a {@link ConfigError} naming the
 * field (`models[0].headers.Authorization`), before the server listens.
 */
import { type CustomModelConfig, registerCustomModel } from "../../ai/models.js";
import type { Api, Model } from "../../ai/types.js";
import { MissingEnvError, substituteEnvRecord } from "../../tools/env.js";
import { ConfigError } from "./config.js";

/** Registers every model of `section` (the config's `models`; `undefined` registers none). */
export function registerConfiguredModels(section: unknown, env: Record<string, string | undefined>): Model<Api>[] {
	if (section === undefined) return [];
	if (!Array.isArray(section)) {
		throw new ConfigError(
			"models",
			`must be an array of models ({ provider, id, baseUrl, ... }), got ${typeof section}`,
		);
	}
	return section.map((entry: CustomModelConfig, index) => {
		const where = `models[${index}]`;
		try {
			const headers = entry?.headers;
			if (headers !== undefined && (typeof headers !== "object" || headers === null || Array.isArray(headers))) {
				throw new ConfigError(`${where}.headers`, "must be an object of header names to string values");
			}
			const resolved = headers ? substituteEnvRecord(headers, `${where}.headers`, env as NodeJS.ProcessEnv) : undefined;
			return registerCustomModel(resolved ? { ...entry, headers: resolved } : entry);
		} catch (error) {
			if (error instanceof ConfigError) throw error;
			if (error instanceof MissingEnvError)
				throw new ConfigError(error.where, `environment variable ${error.variable} is not set`);
			throw new ConfigError(where, (error as Error).message.replace(/^registerCustomModel: config\./, ""));
		}
	});
}
