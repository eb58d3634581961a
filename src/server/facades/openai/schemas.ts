/**
 * TypeBox schemas of the OpenAI-compatible routes. Requests are checked for what the facade reads
 * (the SDKs send many more fields, which are accepted and ignored); message contents are checked
 * by the request mapping (messages.ts), which names the field at fault.
 */
import { type TSchema, Type } from "@sinclair/typebox";

const Open = (properties: Parameters<typeof Type.Object>[0], description?: string) =>
	Type.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) });

/** OpenAI's error shape; `code` is the Wheelhouse code of docs/errors.md. */
export const OpenAIError = Type.Object(
	{
		error: Type.Object({
			message: Type.String(),
			type: Type.String({
				description: "invalid_request_error, authentication_error, not_found_error or server_error",
			}),
			param: Type.Null(),
			code: Type.String({ description: "Stable error code (see docs/errors.md)." }),
		}),
	},
	{ $id: "OpenAIError", description: "An error in OpenAI's shape." },
);

/** Response map helper of the facade: the success schemas plus OpenAI's error shape. */
export function openaiResponses(ok: Record<number, TSchema | object>): Record<string, unknown> {
	return { ...ok, "4xx": OpenAIError, "5xx": OpenAIError };
}

export const SseStream = {
	description: "With `stream: true`: Server-Sent Events as the OpenAI SDKs read them.",
	content: { "text/event-stream": { schema: Type.String() } },
};

const ModelField = Type.String({
	minLength: 1,
	description:
		'A Wheelhouse model, "provider/id", or the name of an agent profile of the server config (GET /openai/v1/models lists both).',
});

export const ChatCompletionBody = Open(
	{
		model: ModelField,
		messages: Type.Array(Open({ role: Type.String() }), {
			minItems: 1,
			description: "The conversation; it ends with a user message, or with the results of the client tools called",
		}),
		stream: Type.Optional(Type.Boolean()),
		stream_options: Type.Optional(Open({ include_usage: Type.Optional(Type.Boolean()) })),
		tools: Type.Optional(
			Type.Array(Open({ type: Type.String() }), {
				description: "Function tools the client executes: the model's calls come back as tool_calls",
			}),
		),
	},
	"A Chat Completions request (other fields are accepted and ignored).",
);

export const ResponseCreateBody = Open(
	{
		model: ModelField,
		input: Type.Union([Type.String(), Type.Array(Open({}))]),
		instructions: Type.Optional(Type.Union([Type.String(), Type.Null()])),
		previous_response_id: Type.Optional(
			Type.Union([Type.String(), Type.Null()], { description: "Continues the session of that response." }),
		),
		stream: Type.Optional(Type.Boolean()),
		tools: Type.Optional(Type.Array(Open({ type: Type.String() }))),
		metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
	},
	"A Responses request (other fields are accepted and ignored).",
);

export const ChatCompletion = Open(
	{
		id: Type.String(),
		object: Type.Literal("chat.completion"),
		created: Type.Integer(),
		model: Type.String(),
		choices: Type.Array(Open({})),
		usage: Open({}),
	},
	"A chat completion.",
);

export const ResponseObjectSchema = Open(
	{
		id: Type.String(),
		object: Type.Literal("response"),
		status: Type.String(),
		model: Type.String(),
		output: Type.Array(Open({})),
	},
	"A response.",
);

export const ResponseParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

export const ModelListSchema = Type.Object({
	object: Type.Literal("list"),
	data: Type.Array(
		Type.Object({
			id: Type.String({ description: '"provider/id" of a model, or the name of an agent profile' }),
			object: Type.Literal("model"),
			created: Type.Integer(),
			owned_by: Type.String({ description: 'The provider, or "wheelhouse-profile" for an agent profile' }),
		}),
	),
});
