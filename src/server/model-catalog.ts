/**
 * The models a server offers (`GET /v1/models`) and how `"provider/id"` resolves to a `Model`.
 *
 * The catalog always holds the stand-in `faux/echo` (marked `standIn: true`); provider models are
 * passed in (the app gives it the providers' catalogs). The default model follows the issue's
 * rule: `WHEELHOUSE_DEFAULT_MODEL` if set, else the first model of the first provider that has a
 * key, else `faux/echo`.
 */
import type { Model } from "../ai/types.js";
import { ECHO_MODEL_SPEC } from "./echo-model.js";

export interface ModelInfo {
	/** `"provider/id"`: what sessions take as `model`. */
	id: string;
	provider: string;
	modelId: string;
	name: string;
	api: string;
	reasoning: boolean;
	input: ("text" | "image")[];
	contextWindow: number;
	maxTokens: number;
	cost: Model<any>["cost"];
	/** True for `faux/echo`: not an LLM, a stand-in so the server works without keys. */
	standIn: boolean;
	/** Whether a key for the provider is configured (always true for the stand-in). */
	available: boolean;
}

export function specOf(model: Model<any>): string {
	return `${model.provider}/${model.id}`;
}

export class ModelCatalog {
	private readonly byId = new Map<string, Model<any>>();
	readonly defaultModel: string;

	constructor(
		models: Model<any>[],
		private readonly hasKey: (provider: string) => boolean,
		defaultModel?: string,
	) {
		for (const model of models) if (!this.byId.has(specOf(model))) this.byId.set(specOf(model), model);
		this.defaultModel = defaultModel || this.pickDefault();
	}

	private pickDefault(): string {
		for (const model of this.byId.values()) {
			if (model.provider !== "faux" && this.hasKey(model.provider)) return specOf(model);
		}
		return ECHO_MODEL_SPEC;
	}

	/** The model for `"provider/id"`, or undefined. */
	resolve(spec: string): Model<any> | undefined {
		return this.byId.get(spec);
	}

	list(): ModelInfo[] {
		return [...this.byId.values()].map((model) => {
			const standIn = specOf(model) === ECHO_MODEL_SPEC;
			return {
				id: specOf(model),
				provider: model.provider,
				modelId: model.id,
				name: model.name,
				api: model.api,
				reasoning: model.reasoning,
				input: model.input,
				contextWindow: model.contextWindow,
				maxTokens: model.maxTokens,
				cost: model.cost,
				standIn,
				available: standIn || this.hasKey(model.provider),
			};
		});
	}
}
