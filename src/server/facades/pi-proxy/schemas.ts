/**
 * TypeBox schemas of `POST /api/stream`. The body is what pi's `streamProxy` sends: the client's
 * whole pi-ai `Model` (only `provider` and `id` are read), the `Context`, and the serialisable
 * stream options. Objects are open: newer clients send more fields, which are accepted and ignored.
 * The messages and tools inside the context are checked by context-check.ts, which names the
 * field at fault.
 */
import { Type } from "@sinclair/typebox";

const Open = (properties: Parameters<typeof Type.Object>[0], description?: string) =>
	Type.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) });

/** Errors as the client reads them (`Proxy error: <error>`), with the stable code beside. */
export const PiProxyError = Type.Object(
	{
		error: Type.String({ description: "What went wrong and what to fix." }),
		code: Type.String({ description: "Stable error code (see docs/errors.md)." }),
	},
	{ $id: "PiProxyError", description: "An error, in the shape pi's streamProxy reads: a string `error`." },
);

const ThinkingLevel = Type.Union(["minimal", "low", "medium", "high", "xhigh"].map((level) => Type.Literal(level)));

export const PiStreamBody = Open(
	{
		model: Open(
			{
				provider: Type.String({ minLength: 1, maxLength: 200 }),
				id: Type.String({ minLength: 1, maxLength: 200 }),
			},
			"A pi-ai Model; the server uses its own model with this provider and id (GET /v1/models): `baseUrl`, `headers` and every other field sent are ignored.",
		),
		context: Open(
			{
				systemPrompt: Type.Optional(Type.String()),
				messages: Type.Array(Open({ role: Type.String() }), { description: "pi-ai messages." }),
				tools: Type.Optional(
					Type.Array(Open({ name: Type.String(), description: Type.String(), parameters: Open({}) })),
				),
			},
			"A pi-ai Context.",
		),
		options: Type.Optional(
			Open(
				{
					temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
					maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
					reasoning: Type.Optional(ThinkingLevel),
					cacheRetention: Type.Optional(Type.Union(["none", "short", "long"].map((v) => Type.Literal(v)))),
					sessionId: Type.Optional(Type.String({ maxLength: 200 })),
					transport: Type.Optional(
						Type.Union(["sse", "websocket", "websocket-cached", "auto"].map((v) => Type.Literal(v))),
					),
					thinkingBudgets: Type.Optional(
						Type.Object(
							{
								minimal: Type.Optional(Type.Integer({ minimum: 0 })),
								low: Type.Optional(Type.Integer({ minimum: 0 })),
								medium: Type.Optional(Type.Integer({ minimum: 0 })),
								high: Type.Optional(Type.Integer({ minimum: 0 })),
							},
							{ additionalProperties: false },
						),
					),
					maxRetryDelayMs: Type.Optional(Type.Integer({ minimum: 0 })),
					metadata: Type.Optional(Open({})),
					headers: Type.Optional(
						Type.Record(Type.String(), Type.String(), { description: "Ignored: the server sends its own headers." }),
					),
				},
				"Stream options; `headers`, and any API key, are ignored.",
			),
		),
	},
	"What pi's streamProxy sends.",
);

export const ProxyEventStream = {
	description:
		"Server-Sent Events, `data: <json>` lines only: `start`, then `text_*`, `thinking_*`, `toolcall_*` events, then exactly one `done` or `error`.",
	content: { "text/event-stream": { schema: Type.String() } },
};
