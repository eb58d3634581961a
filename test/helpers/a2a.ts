/**
 * The reference A2A client (`@a2a-js/sdk` 1.x, JSON-RPC transport) against a test server: a client
 * for one API key, messages in the SDK's shape, and readers of its stream responses.
 */
import { Role, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

/** A client of the server at `url` that sends `key` as its bearer token (the card is read without one). */
export async function a2aClient(url: string, key?: string): Promise<Client> {
	const fetchImpl: typeof fetch = (input, init) => {
		const headers = new Headers(init?.headers);
		if (key) headers.set("authorization", `Bearer ${key}`);
		return fetch(input, { ...init, headers });
	};
	const factory = new ClientFactory(
		ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
			transports: [new JsonRpcTransportFactory({ fetchImpl })],
		}),
	);
	return factory.createFromUrl(url);
}

let counter = 0;

/** A user message with text and data parts, in the SDK's shape. */
export function userMessage(
	parts: (string | Record<string, unknown>)[],
	ids: { contextId?: string; taskId?: string } = {},
) {
	return {
		messageId: `msg-${++counter}-${Date.now()}`,
		contextId: ids.contextId ?? "",
		taskId: ids.taskId ?? "",
		role: Role.ROLE_USER,
		parts: parts.map((part) => ({
			content:
				typeof part === "string" ? { $case: "text" as const, value: part } : { $case: "data" as const, value: part },
			metadata: undefined,
			filename: "",
			mediaType: "",
		})),
		metadata: undefined,
		extensions: [],
		referenceTaskIds: [],
	};
}

/** The text of a task's answer artifact. */
export function answerOf(task: Task): string {
	return (task.artifacts ?? [])
		.flatMap((artifact) => artifact.parts)
		.map((part) => (part.content?.$case === "text" ? part.content.value : ""))
		.join("");
}

/** The text an artifact update carries. */
export function chunkOf(event: StreamResponse): string {
	if (event.payload?.$case !== "artifactUpdate") return "";
	return (event.payload.value.artifact?.parts ?? [])
		.map((part) => (part.content?.$case === "text" ? part.content.value : ""))
		.join("");
}

/**
 * The answer artifact's text after `events`, applied as A2A defines `append`: an update with it
 * adds to the text, one without it replaces the text.
 */
export function assemble(events: readonly StreamResponse[], text = ""): string {
	for (const event of events) {
		if (event.payload?.$case !== "artifactUpdate") continue;
		text = event.payload.value.append ? text + chunkOf(event) : chunkOf(event);
	}
	return text;
}

/** The state a stream response reports (a task's or a status update's), or undefined. */
export function stateOf(event: StreamResponse): TaskState | undefined {
	if (event.payload?.$case === "task") return event.payload.value.status?.state;
	if (event.payload?.$case === "statusUpdate") return event.payload.value.status?.state;
	return undefined;
}

/** The Wheelhouse event id a stream response carries (the event-id extension). */
export function eventIdOf(event: StreamResponse): number {
	const metadata = event.payload?.value && "metadata" in event.payload.value ? event.payload.value.metadata : undefined;
	return Number((metadata as { wheelhouse?: { eventId?: number } } | undefined)?.wheelhouse?.eventId);
}

/** Reads a whole stream. */
export async function collect(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
	const events: StreamResponse[] = [];
	for await (const event of stream) events.push(event);
	return events;
}

export { Role, TaskState };
