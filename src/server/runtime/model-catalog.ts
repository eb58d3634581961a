/**
 * The models a server offers (`GET /v1/models`) and how `"provider/id"` resolves to a `Model`.
 *
 * The catalog always holds the stand-in `faux/echo` (marked `standIn: true`); provider models are
 * passed in (the app gives it the providers' catalogs). The default model is
 * `WHEELHOUSE_DEFAULT_MODEL` if set (so a deployment can pin one), else the first model of the first provider that has a
 * key, else `faux/echo`.
 */
import { findEnvKeys, requiresApiKey } from "../../ai/env-keys.js";
import type { Model } from "../../ai/types.js";
import { ECHO_MODEL_SPEC } from "./echo-model.js";
import type { SessionErrorCode } from "./session/errors.js";

/** Why a session cannot use a model; `message` says what to do about it. */
export interface ModelProblem {
	code: Extract<SessionErrorCode, "UNKNOWN_MODEL" | "MODEL_UNAVAILABLE">;
	message: string;
}

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
	/**
	 * Whether a session can use it: the stand-in, a model whose server needs no key (a local
	 * server), or one whose provider's key is configured. Sessions are refused the others.
	 */
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

	/** A model the server has no key for would only fail at its first call, inside a stream. */
	private available(model: Model<any>): boolean {
		return specOf(model) === ECHO_MODEL_SPEC || !requiresApiKey(model) || this.hasKey(model.provider);
	}

	/** Why a session cannot use `spec`, or undefined when it can. */
	problem(spec: string): ModelProblem | undefined {
		const model = this.byId.get(spec);
		if (!model) {
			return {
				code: "UNKNOWN_MODEL",
				message: `Unknown model "${spec}"; use "provider/id" of one of GET /v1/models (e.g. ${ECHO_MODEL_SPEC}).`,
			};
		}
		if (this.available(model)) return undefined;
		const names = findEnvKeys(model.provider);
		const where = names
			? `set ${names.join(" or ")} (or providerKeys.${model.provider} in the config file)`
			: `give the model an apiKeyEnv in the config file's models and set that variable`;
		return {
			code: "MODEL_UNAVAILABLE",
			message: `Model "${spec}" needs an API key for provider "${model.provider}" and the server has none: ${where}, then restart the server. GET /v1/models shows which models are available.`,
		};
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
				available: this.available(model),
			};
		});
	}
}
