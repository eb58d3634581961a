/**
 * A2A push notifications through the durable webhook outbox. A task's push configs are a facade
 * record (`a2a.push`, keyed by the task id: every replica reads the same ones). When a task's run
 * ends, or starts waiting for input, the replica running it puts one delivery in the outbox in the
 * same commit as that fact (`A2aPushReporter`, asked synchronously by the store's write), so a
 * replica killed right after the run's end cannot lose it: any replica's dispatcher sends it.
 *
 * That delivery names the task, not a URL (endpoint `a2a-push:<sessionId>:<taskId>`): on its first
 * attempt the router (`A2aPushRouter`) expands it into one delivery per push config the task had
 * when the state was reached (endpoint `a2a-push:<sessionId>:<taskId>:<configId>`), and each of
 * those is POSTed to its config's URL as it is at that attempt (a deleted config is not sent to),
 * with the config's token in `X-A2A-Notification-Token` and its `authentication` as
 * `Authorization: <scheme> <credentials>`. A config created after the task ended gets the final
 * state at once (`finalStateDelivery`). Delivery is at least once, each delivery's `webhook-id`
 * stable across its attempts.
 *
 * The body is an A2A `StreamResponse` with a status update (`{statusUpdate: {taskId, contextId,
 * status: {state, timestamp}}}`), as `@a2a-js/sdk`'s own sender posts it.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type {
	FacadeRecordStore,
	NewWebhookDelivery,
	PendingInteraction,
	RunEnd,
	WebhookDelivery,
} from "../../../store/types.js";
import type { DeliveryRoute, DeliveryRouter } from "../../observability/webhooks/dispatcher.js";
import { newWebhookId } from "../../observability/webhooks/events.js";
import type { MoreDeliveries } from "../../observability/webhooks/store.js";
import type { TaskState } from "./wire.js";

/** The facade record kind of a task (one per run the facade started, keyed by the run id). */
export const TASK_RECORD = "a2a.task";
/** The facade record kind of a task's push configs (one record per task, keyed by its id). */
export const PUSH_RECORD = "a2a.push";
/** The outbox event type of push notifications. */
export const PUSH_EVENT = "a2a.push";
/** Push configs one task may have. */
export const MAX_PUSH_CONFIGS = 10;
const PREFIX = "a2a-push:";
const CONFIG_ID = /^[A-Za-z0-9._~-]{1,128}$/;
const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** One push config as stored (and as the push-config methods answer it, with the task id). */
export interface PushConfig {
	id: string;
	url: string;
	/** Sent as `X-A2A-Notification-Token`; empty for none. */
	token: string;
	/** Sent as `Authorization: <scheme> <credentials>`. */
	authentication?: { scheme: string; credentials: string };
	createdAt: number;
}

/** The stored push configs of tasks (facade records every replica reads). */
export class PushConfigs {
	constructor(private readonly store: FacadeRecordStore) {}

	async list(sessionId: string, taskId: string): Promise<PushConfig[]> {
		const record = await this.store.getFacadeRecord(sessionId, PUSH_RECORD, taskId);
		return record ? ((JSON.parse(record.data) as { configs: PushConfig[] }).configs ?? []) : [];
	}

	/** Replaces a task's configs (durable on resolve). */
	async save(sessionId: string, taskId: string, configs: PushConfig[]): Promise<void> {
		await this.store.putFacadeRecords(
			sessionId,
			[{ kind: PUSH_RECORD, key: taskId, data: JSON.stringify({ configs }) }],
			Date.now(),
		);
	}
}

/** Whether `id` may name a push config (it becomes part of an outbox endpoint). */
export function validConfigId(id: string): boolean {
	return CONFIG_ID.test(id);
}

/**
 * What is wrong with a push URL, or undefined: it must be https, or http to this machine
 * (`localhost`, `127.0.0.1`, `[::1]`), and must not name a private, link-local or unspecified
 * address literally (the host's DNS answers are checked again before each attempt).
 */
export function pushUrlProblem(value: string): string | undefined {
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		return "is not a URL";
	}
	const local = LOCAL_HOSTS.has(url.hostname);
	if (url.protocol !== "https:" && !(url.protocol === "http:" && local))
		return "must be an https URL (http only to localhost)";
	if (url.username !== "" || url.password !== "") return "must not carry credentials (use authentication)";
	const host = url.hostname.replace(/^\[|\]$/g, "");
	if (!local && isIP(host) !== 0 && blockedAddress(host)) return "names a private or link-local address";
	return undefined;
}

/** Private, loopback, link-local, CGNAT and unspecified addresses (v4, v6, v4-mapped v6). */
export function blockedAddress(address: string): boolean {
	const a = address.toLowerCase();
	let v4 = a.startsWith("::ffff:") ? a.slice(7) : a;
	// A v4-mapped address as URLs write it (`::ffff:a00:1` is 10.0.0.1).
	const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v4);
	if (hex) {
		const [hi, lo] = [Number.parseInt(hex[1] as string, 16), Number.parseInt(hex[2] as string, 16)];
		v4 = `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
	}
	if (isIP(v4) === 4) {
		const [x, y] = v4.split(".").map(Number) as [number, number];
		return (
			x === 0 ||
			x === 10 ||
			x === 127 ||
			(x === 100 && y >= 64 && y < 128) ||
			(x === 169 && y === 254) ||
			(x === 172 && y >= 16 && y < 32) ||
			(x === 192 && y === 168) ||
			x >= 224
		);
	}
	return a === "::" || a === "::1" || /^f[cd]/.test(a) || /^fe[89ab]/.test(a);
}

/** The state a run's end (`completed`, `aborted`, `error`, `interrupted`) puts its task in. */
export function endState(status: string): TaskState {
	if (status === "completed") return "TASK_STATE_COMPLETED";
	if (status === "aborted") return "TASK_STATE_CANCELED";
	return "TASK_STATE_FAILED";
}

/** The body of a push notification: a status update as a `StreamResponse`. */
export function pushPayload(taskId: string, contextId: string, state: TaskState, at: number): string {
	return JSON.stringify({
		statusUpdate: { taskId, contextId, status: { state, timestamp: new Date(at).toISOString() } },
	});
}

/**
 * Whether a session's runs may be tasks, from its stored metadata: a session made by the facade
 * (`facade: "a2a"`), or one it marked before its first task (`a2a.contextId`).
 */
export function mayHaveTasks(metadata: Readonly<Record<string, string>>): boolean {
	return metadata.facade === "a2a" || metadata[CONTEXT_KEY] !== undefined;
}

/** The metadata key of a session's A2A context id (the session id when the client gave none). */
export const CONTEXT_KEY = "a2a.contextId";

/**
 * Puts a task's state changes in the outbox with the writes that make them. It keeps nothing of
 * its own: a run's end, or a pending interaction of a run, gets one fan-out delivery when the
 * session's stored metadata says its runs may be tasks (`mayHaveTasks`, read through
 * `metadataOf` from the session as the replica running the run loaded it), and every interrupted
 * run gets one (rare, and written where the session may not be loaded: at startup, or by the
 * replica taking a lost one's session over). The router expands a fan-out at dispatch from the
 * durable push configs of the run's task: none for a run that is not a task or a task without
 * configs (the delivery is then done without a request). So a task whose run was taken over by
 * another replica, or recovered by a restarted process, is reported like any other. The payload
 * names the session as the context; the router puts the task's own context id in.
 */
export class A2aPushReporter implements MoreDeliveries {
	constructor(
		private readonly metadataOf: (sessionId: string) => Readonly<Record<string, string>> | undefined = () => undefined,
	) {}

	private reported(sessionId: string): boolean {
		const metadata = this.metadataOf(sessionId);
		return metadata !== undefined && mayHaveTasks(metadata);
	}

	runEnded(sessionId: string, runId: string, end: RunEnd): NewWebhookDelivery[] {
		if (!this.reported(sessionId)) return [];
		return [fanOut(sessionId, runId, pushPayload(runId, sessionId, endState(end.status), end.endedAt), end.endedAt)];
	}

	pendingCreated(
		interaction: Omit<PendingInteraction, "resolvedAt" | "resolution">,
		runId: string | null,
	): NewWebhookDelivery[] {
		const { sessionId } = interaction;
		if (runId === null || !this.reported(sessionId)) return [];
		const at = interaction.createdAt;
		return [fanOut(sessionId, runId, pushPayload(runId, sessionId, "TASK_STATE_INPUT_REQUIRED", at), at)];
	}

	runInterrupted(sessionId: string, runId: string | null, at: number): NewWebhookDelivery[] {
		if (runId === null) return [];
		return [fanOut(sessionId, runId, pushPayload(runId, sessionId, "TASK_STATE_FAILED", at), at)];
	}
}

function fanOut(sessionId: string, taskId: string, payload: string, at: number): NewWebhookDelivery {
	return {
		id: newWebhookId(),
		endpoint: `${PREFIX}${sessionId}:${taskId}`,
		eventType: PUSH_EVENT,
		payload,
		createdAt: at,
	};
}

/** The delivery of a task's final state to a config made after the task ended. */
export function finalStateDelivery(
	sessionId: string,
	taskId: string,
	configId: string,
	payload: string,
	at: number,
): NewWebhookDelivery {
	return {
		id: newWebhookId(),
		endpoint: `${PREFIX}${sessionId}:${taskId}:${configId}`,
		eventType: PUSH_EVENT,
		payload,
		createdAt: at,
	};
}

/** Routes the outbox's push deliveries (see the file comment). */
export class A2aPushRouter implements DeliveryRouter {
	private readonly configs: PushConfigs;

	constructor(
		private readonly store: FacadeRecordStore,
		private readonly resolve: (host: string) => Promise<string[]> = async (host) =>
			(await lookup(host, { all: true })).map((a) => a.address),
		private readonly now: () => number = Date.now,
	) {
		this.configs = new PushConfigs(store);
	}

	handles(endpoint: string): boolean {
		return endpoint.startsWith(PREFIX);
	}

	async route(delivery: WebhookDelivery): Promise<DeliveryRoute> {
		const [sessionId, taskId, configId] = delivery.endpoint.slice(PREFIX.length).split(":");
		if (!sessionId || !taskId) return { kind: "gone", error: "not a push delivery" };
		let configs: PushConfig[];
		try {
			configs = await this.configs.list(sessionId, taskId);
		} catch (error) {
			return { kind: "retry", error: `cannot read push configs: ${(error as Error).message}` };
		}
		if (configId === undefined) {
			// The configs the task had when it reached the state; later ones get its final state on creation.
			const at = stateTime(delivery.payload) ?? delivery.createdAt;
			const targets = configs.filter((c) => c.createdAt <= at);
			// A run that is not a task has no configs (they are made only for a task whose record exists).
			if (targets.length === 0) return { kind: "expand", deliveries: [] };
			let payload: string;
			try {
				payload = withContext(delivery.payload, await this.contextOf(sessionId, taskId));
			} catch (error) {
				return { kind: "retry", error: `cannot read the task: ${(error as Error).message}` };
			}
			const now = this.now();
			return {
				kind: "expand",
				deliveries: targets.map((c) => finalStateDelivery(sessionId, taskId, c.id, payload, now)),
			};
		}
		const config = configs.find((c) => c.id === configId);
		if (!config) return { kind: "gone", error: "push config deleted" };
		const problem = pushUrlProblem(config.url) ?? (await this.addressProblem(config.url));
		if (problem) return { kind: "gone", error: `push URL refused: ${problem}` };
		const url = new URL(config.url);
		return {
			kind: "send",
			target: config.url,
			headers: {
				...(config.token ? { "x-a2a-notification-token": config.token } : {}),
				...(config.authentication
					? { authorization: `${config.authentication.scheme} ${config.authentication.credentials}` }
					: {}),
			},
			logged: `${url.protocol}//${url.host}${url.pathname}`,
		};
	}

	/** The context id the task's client knows (the session id when it gave none). */
	private async contextOf(sessionId: string, taskId: string): Promise<string> {
		const record = await this.store.getFacadeRecord(sessionId, TASK_RECORD, taskId);
		const contextId = record ? (JSON.parse(record.data) as { contextId?: unknown }).contextId : undefined;
		return typeof contextId === "string" ? contextId : sessionId;
	}

	/** Refuses a host that resolves to a private address (localhost excepted). */
	private async addressProblem(value: string): Promise<string | undefined> {
		const host = new URL(value).hostname;
		if (LOCAL_HOSTS.has(host) || isIP(host.replace(/^\[|\]$/g, "")) !== 0) return undefined;
		try {
			const addresses = await this.resolve(host);
			return addresses.some(blockedAddress) ? "resolves to a private or link-local address" : undefined;
		} catch {
			return undefined; // the attempt fails to connect and is retried
		}
	}
}

/** A fan-out's payload with the task's context id (the reporter only knew the session). */
function withContext(payload: string, contextId: string): string {
	const body = JSON.parse(payload) as { statusUpdate: { contextId: string } };
	body.statusUpdate.contextId = contextId;
	return JSON.stringify(body);
}

function stateTime(payload: string): number | undefined {
	try {
		const at = Date.parse(
			(JSON.parse(payload) as { statusUpdate: { status: { timestamp: string } } }).statusUpdate.status.timestamp,
		);
		return Number.isFinite(at) ? at : undefined;
	} catch {
		return undefined;
	}
}
