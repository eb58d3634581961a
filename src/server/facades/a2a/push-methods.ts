/**
 * The push-config methods of A2A v1 (`CreateTaskPushNotificationConfig`,
 * `GetTaskPushNotificationConfig`, `ListTaskPushNotificationConfigs`,
 * `DeleteTaskPushNotificationConfig`) over a task's stored configs (push.ts says how they are
 * delivered). A task of another key is `TaskNotFound`, as for every task method.
 */
import { randomUUID } from "node:crypto";
import {
	endState,
	finalStateDelivery,
	MAX_PUSH_CONFIGS,
	type PushConfig,
	pushPayload,
	pushUrlProblem,
	validConfigId,
} from "./push.js";
import type { A2aSessionAccess, FoundTask } from "./session-access.js";
import { invalidParams, RPC_ERRORS, RpcError } from "./wire.js";

type Json = Record<string, any>;

/** A config as the methods answer it (`TaskPushNotificationConfig`). */
function wireConfig(taskId: string, config: PushConfig): Json {
	return {
		taskId,
		id: config.id,
		url: config.url,
		token: config.token,
		...(config.authentication ? { authentication: config.authentication } : {}),
	};
}

function optionalString(params: Json, field: string): string | undefined {
	const value = params[field];
	if (value === undefined || value === null || value === "") return undefined;
	if (typeof value !== "string") throw invalidParams(field, "must be a string");
	return value;
}

export class PushConfigMethods {
	constructor(private readonly access: A2aSessionAccess) {}

	private async task(ownerId: string | null, params: Json): Promise<FoundTask> {
		const taskId = params.taskId;
		if (typeof taskId !== "string" || taskId === "") throw invalidParams("taskId", "must be a non-empty string");
		const found = await this.access.findTask(ownerId, taskId);
		if (!found) throw new RpcError(RPC_ERRORS.TASK_NOT_FOUND, `No task "${taskId}" exists for this key.`);
		return found;
	}

	/** Adds (or replaces, by id) a config; a config made after the task ended gets its final state at once. */
	async create(ownerId: string | null, params: Json): Promise<Json> {
		// The config's fields may also come nested, as v1's earlier drafts sent them.
		const fields: Json =
			typeof params.pushNotificationConfig === "object" ? { ...params, ...params.pushNotificationConfig } : params;
		const found = await this.task(ownerId, params);
		const url = optionalString(fields, "url");
		if (!url) throw invalidParams("url", "must be the URL to POST the task's notifications to");
		const problem = pushUrlProblem(url);
		if (problem) throw invalidParams("url", problem);
		const id = optionalString(fields, "id") ?? randomUUID();
		if (!validConfigId(id)) throw invalidParams("id", "must be 1 to 128 letters, digits or . _ ~ -");
		const token = optionalString(fields, "token") ?? "";
		let authentication: PushConfig["authentication"];
		const auth = fields.authentication;
		if (auth !== undefined && auth !== null) {
			if (
				typeof auth !== "object" ||
				typeof auth.scheme !== "string" ||
				!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(auth.scheme)
			)
				throw invalidParams("authentication.scheme", "must be an HTTP authentication scheme (e.g. Bearer)");
			if (typeof auth.credentials !== "string" || /[\r\n]/.test(auth.credentials))
				throw invalidParams("authentication.credentials", "must be a string without line breaks");
			authentication = { scheme: auth.scheme, credentials: auth.credentials };
		}
		if (/[\r\n]/.test(token)) throw invalidParams("token", "must not contain line breaks");
		const { session, taskId, record } = found;
		const configs = (await this.access.taskPushConfigs(session, taskId)).filter((c) => c.id !== id);
		if (configs.length >= MAX_PUSH_CONFIGS)
			throw invalidParams("taskPushNotificationConfig", `a task has at most ${MAX_PUSH_CONFIGS} push configs`);
		const config: PushConfig = { id, url, token, ...(authentication ? { authentication } : {}), createdAt: Date.now() };
		await this.access.saveTaskPushConfigs(session, taskId, [...configs, config]);
		// A task that ended before this config existed: its end's delivery does not include it.
		const run = (await this.access.runs(session)).find((r) => r.id === taskId);
		if (run && run.status !== "running" && run.endedAt !== null && run.endedAt < config.createdAt) {
			const payload = pushPayload(taskId, record.contextId, endState(run.status), run.endedAt);
			await this.access.enqueuePush([finalStateDelivery(session.id, taskId, id, payload, config.createdAt)]);
		}
		return wireConfig(taskId, config);
	}

	async get(ownerId: string | null, params: Json): Promise<Json> {
		const { session, taskId } = await this.task(ownerId, params);
		const id = optionalString(params, "id");
		const configs = await this.access.taskPushConfigs(session, taskId);
		const config = id === undefined ? configs[0] : configs.find((c) => c.id === id);
		if (!config) throw invalidParams("id", `task ${taskId} has no push config ${JSON.stringify(id ?? "")}`);
		return wireConfig(taskId, config);
	}

	async list(ownerId: string | null, params: Json): Promise<Json> {
		const { session, taskId } = await this.task(ownerId, params);
		const configs = await this.access.taskPushConfigs(session, taskId);
		return { configs: configs.map((c) => wireConfig(taskId, c)), nextPageToken: "" };
	}

	/** Deletes a config; deliveries to it not yet sent are dropped. */
	async delete(ownerId: string | null, params: Json): Promise<Json> {
		const { session, taskId } = await this.task(ownerId, params);
		const id = optionalString(params, "id");
		if (id === undefined) throw invalidParams("id", "must name the push config to delete");
		const configs = await this.access.taskPushConfigs(session, taskId);
		if (!configs.some((c) => c.id === id))
			throw invalidParams("id", `task ${taskId} has no push config ${JSON.stringify(id)}`);
		await this.access.saveTaskPushConfigs(
			session,
			taskId,
			configs.filter((c) => c.id !== id),
		);
		return {};
	}
}
