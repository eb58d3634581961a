/**
 * The Wheelhouse HTTP API's types, generated from openapi.yaml by scripts/gen-client-types.ts
 * (openapi-typescript). Do not edit: `npm run openapi` regenerates it.
 */
export interface paths {
	"/openapi.json": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** This OpenAPI document (JSON). */
		get: operations["getOpenapiJson"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/metrics": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/**
		 * Prometheus metrics
		 * @description The server's metrics in the Prometheus text format (see the metrics table in docs/operations.md). Needs the operator credential (`Authorization: Bearer <WHEELHOUSE_METRICS_TOKEN>`; an API key gets 403) unless `WHEELHOUSE_METRICS_AUTH=none`; absent when `WHEELHOUSE_METRICS=off` or when `WHEELHOUSE_METRICS_PORT` serves it on its own port.
		 */
		get: operations["getMetrics"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/healthz": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** Liveness */
		get: operations["getHealthz"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/readyz": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** Readiness */
		get: operations["getReadyz"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/models": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** Models sessions can use (faux/echo is marked standIn: a scripted stand-in, not an LLM) */
		get: operations["getModels"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/tools": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** Server tools sessions can enable */
		get: operations["getTools"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** List sessions (oldest first, cursor pagination), filtered by `status`, `profile`, `metadata.<key>`, `updatedAfter`/`updatedBefore` */
		get: operations["getSessions"];
		put?: never;
		/** Create a session */
		post: operations["postSessions"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** A session's config and live state */
		get: operations["getSessionsById"];
		put?: never;
		post?: never;
		/** Abort the session's run, then delete it and everything of it */
		delete: operations["deleteSessionsById"];
		options?: never;
		head?: never;
		/** Change a session's config, client tools and approval policies (stored; applies from the next run at the latest) */
		patch: operations["patchSessionsById"];
		trace?: never;
	};
	"/v1/sessions/{id}/messages": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** The transcript, paginated by offset */
		get: operations["getSessionsByIdMessages"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/prompt": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Start a run with a user message (SSE with Accept: text/event-stream, else 202) */
		post: operations["postSessionsByIdPrompt"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/continue": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Continue from the transcript (the reference's continue rules) */
		post: operations["postSessionsByIdContinue"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/steer": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Queue a steering message (delivered after the current tool batch) */
		post: operations["postSessionsByIdSteer"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/follow-up": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Queue a follow-up message (delivered when the agent would stop) */
		post: operations["postSessionsByIdFollowUp"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/queue": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		post?: never;
		/** Clear the steering and follow-up queues (or one, with ?kind=) */
		delete: operations["deleteSessionsByIdQueue"];
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/abort": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Abort the active run (it ends with its agent_end); queued messages stay */
		post: operations["postSessionsByIdAbort"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/fork": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Fork a session: a new session with its configuration and its transcript up to a message (409 while it runs); the parent is unchanged */
		post: operations["postSessionsByIdFork"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/rewind": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Rewind: the transcript ends with a message; what followed is kept as a superseded branch (409 while a run is active) */
		post: operations["postSessionsByIdRewind"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/regenerate": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Regenerate: supersede the answer to the last user message and answer it again (SSE with Accept: text/event-stream, else 202) */
		post: operations["postSessionsByIdRegenerate"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/messages/{messageId}": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		/** Edit a user message: the transcript is rewound to before it (it and what followed become a superseded branch), then prompted with the new content */
		patch: operations["patchSessionsByIdMessagesById"];
		trace?: never;
	};
	"/v1/sessions/{id}/branches": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** The superseded branches of a session: what rewinds, regenerates and edits took off its transcript */
		get: operations["getSessionsByIdBranches"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/events": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** The session's SSE stream: after Last-Event-ID (or ?after=) replays the retained events then goes live; without, a session_snapshot first */
		get: operations["getSessionsByIdEvents"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/stream-token": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Mint a short-lived token that opens this session's event stream with ?token= instead of the Authorization header (for EventSource) */
		post: operations["postSessionsByIdStreamToken"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/me": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** Who the server takes the caller for: subject, tenant, how it authenticated */
		get: operations["getMe"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/tokens": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Mint a short-lived client token for one session with scopes (for a browser) */
		post: operations["postTokens"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/compact": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Compact the session's context now: summarise the older messages with the session's model, keep the recent ones (409 while a run is active) */
		post: operations["postSessionsByIdCompact"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/usage": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** Tokens and cost of the caller's API key, by day and by model, and what is left of its budget */
		get: operations["getUsage"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/schedules": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** List schedules (oldest first, cursor pagination) */
		get: operations["getSchedules"];
		put?: never;
		/** Create a schedule (cron or one-shot) that prompts a new or an existing session */
		post: operations["postSchedules"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/schedules/{id}": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** A schedule */
		get: operations["getSchedulesById"];
		put?: never;
		post?: never;
		/** Delete a schedule and its fires (runs it started go on) */
		delete: operations["deleteSchedulesById"];
		options?: never;
		head?: never;
		/** Change a schedule (the next tick is computed again when its timing changes) */
		patch: operations["patchSchedulesById"];
		trace?: never;
	};
	"/v1/schedules/{id}/pause": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Pause a schedule: its ticks pass unfired and unrecorded until it is resumed */
		post: operations["postSchedulesByIdPause"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/schedules/{id}/resume": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Resume a paused schedule from its next tick after now (a passed one-shot fires per `missed`) */
		post: operations["postSchedulesByIdResume"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/schedules/{id}/run-now": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Fire a schedule once now, besides its ticks (also when paused); answers once the fire's run started */
		post: operations["postSchedulesByIdRunNow"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/schedules/{id}/fires": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** A schedule's fires, newest first (`?before=` pages back) */
		get: operations["getSchedulesByIdFires"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/tool-results/{toolCallId}": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Post the result of a client-side tool call (announced by tool_execution_start); 404 if no such call waits, 409 if it already ended */
		post: operations["postSessionsByIdToolResultsById"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/approvals/{toolCallId}": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Approve or deny a tool call announced by approval_requested; a denial's reason is the error result the model sees */
		post: operations["postSessionsByIdApprovalsById"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/elicitations/{elicitationId}": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Answer an upstream MCP server's question (announced by elicitation_requested): accept with content that fits the requested schema, decline, or cancel */
		post: operations["postSessionsByIdElicitationsById"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/sessions/{id}/tool-declarations": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		/** Replace the session's client-side tools and/or per-session approval policies (stored; the same as these fields of PATCH /v1/sessions/:id) */
		put: operations["putSessionsByIdToolDeclarations"];
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/v1/tools/mcp-servers": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** The configured MCP servers: connection state, last error, and their tools */
		get: operations["getToolsMcpServers"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/openai/v1/models": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** The models, in OpenAI's list shape */
		get: operations["getOpenaiModels"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/openai/v1/chat/completions": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Chat Completions over a session (stream: true for SSE chunks) */
		post: operations["postOpenaiChatCompletions"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/openai/v1/responses": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Responses over a session: previous_response_id continues it (stream: true for semantic events) */
		post: operations["postOpenaiResponses"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/openai/v1/responses/{id}": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** A response this server answered (stored with its session: the latest 1000 of each) */
		get: operations["getOpenaiResponsesById"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/openai/v1/responses/{id}/cancel": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Cancel a response: aborts its run while it is in progress, or while the run waits for the outputs of its function calls (a finished response is returned as it is) */
		post: operations["postOpenaiResponsesByIdCancel"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/agui/v1/run": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** Run the agent of a thread (AG-UI RunAgentInput): the run as AG-UI events */
		post: operations["postAguiRun"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/agui/v1/threads/{threadId}/events": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** Catch up on a thread: RUN_STARTED, MESSAGES_SNAPSHOT, STATE_SNAPSHOT, then the run in progress live to its end */
		get: operations["getAguiThreadsByIdEvents"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/.well-known/agent-card.json": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** The A2A agent card (open: it says how to authenticate) */
		get: operations["getWellKnownAgentCardJson"];
		put?: never;
		post?: never;
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/a2a/v1": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** A2A v1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, and the TaskPushNotificationConfig methods */
		post: operations["postA2a"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/mcp": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** MCP Streamable HTTP: the agents as tools (JSON-RPC messages in; the answers, or their SSE stream, out) */
		post: operations["postMcp"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
	"/api/stream": {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		get?: never;
		put?: never;
		/** One model call for pi's streamProxy, on the server's model and keys */
		post: operations["postApiStream"];
		delete?: never;
		options?: never;
		head?: never;
		patch?: never;
		trace?: never;
	};
}
export type webhooks = Record<string, never>;
export interface components {
	schemas: {
		/** A2AAgentCard */
		A2AAgentCard: {
			name: string;
			description: string;
			supportedInterfaces: {
				[key: string]: unknown;
			}[];
			version: string;
			capabilities: {
				[key: string]: unknown;
			};
			skills: {
				[key: string]: unknown;
			}[];
		} & {
			[key: string]: unknown;
		};
		/** AbortResult */
		AbortResult: {
			/** @description True when a run was active (it ends with its agent_end). */
			aborted: boolean;
			runId: string | null;
		};
		/**
		 * AgentMessage
		 * @description A pi-ai message (user, assistant, toolResult) or a custom message.
		 */
		AgentMessage: {
			role: string;
		} & {
			[key: string]: unknown;
		};
		/** ApprovalDecision */
		ApprovalDecision: {
			/** @description true runs the tool; false blocks it */
			approve: boolean;
			/** @description Shown to the model with a denial (and logged with an approval) */
			reason?: string;
		};
		/** ClearQueueResult */
		ClearQueueResult: {
			cleared: number;
			steeringCount: number;
			followUpCount: number;
		};
		/** ClientToken */
		ClientToken: {
			/** @description Send as `Authorization: Bearer <token>`, or as `?token=` on the session's event stream. */
			token: string;
			sessionId: string;
			scopes: ("read" | "write" | "approve")[];
			/** @description Milliseconds since the epoch after which the token opens nothing. */
			expiresAt: number;
			/** @description The session's events path with the token, ready for `new EventSource()`. */
			eventsUrl: string;
		};
		/** ClientToolResult */
		ClientToolResult: {
			/** @description What the model sees: a string or text/image blocks */
			content:
				| string
				| (
						| {
								/** @enum {string} */
								type: "text";
								text: string;
						  }
						| {
								/** @enum {string} */
								type: "image";
								/** @description base64 */
								data: string;
								mimeType: string;
						  }
				  )[];
			/** @default false */
			isError?: boolean;
			/** @description Kept for UIs and logs; not sent to the model */
			details?: unknown;
		};
		/** ClientToolSpec */
		ClientToolSpec: {
			name: string;
			description: string;
			parameters?: {
				[key: string]: unknown;
			};
			/**
			 * @description "always": every call waits for a human decision (POST .../approvals/:toolCallId); "never": runs at once
			 * @enum {string}
			 */
			approval?: "always" | "never";
		};
		/**
		 * CompactionSettings
		 * @description Context compaction of this session. The object replaces the session's previous one; a field left out takes the server's default (WHEELHOUSE_COMPACTION*).
		 */
		CompactionSettings: {
			/** @description Compact automatically (at the threshold and on a context-overflow error). */
			enabled?: boolean;
			/** @description Compact before a model call when the context passes the model's context window minus this (at most half the window counts). */
			reserveTokens?: number;
			/** @description About how many tokens of the most recent messages are kept verbatim (at most half the threshold counts). */
			keepRecentTokens?: number;
		};
		/**
		 * CompactionState
		 * @description Context compaction: the settings in force, the context's size, the latest compaction.
		 */
		CompactionState: {
			enabled: boolean;
			reserveTokens: number;
			keepRecentTokens: number;
			/** @description The model's context window. */
			contextWindow: number;
			/** @description A model call with a context above this compacts first. */
			thresholdTokens: number;
			/** @description The context the next model call would send, in tokens: the last answer's reported usage plus an estimate of what came after it. */
			contextTokens: number;
			/** @enum {string} */
			status: "idle" | "compacting";
			last: {
				at: number;
				/** @enum {string} */
				reason: "threshold" | "overflow" | "manual";
				tokensBefore: number;
				tokensAfter: number;
				firstKeptIndex: number;
			} | null;
			lastError: {
				at: number;
				/** @enum {string} */
				reason: "threshold" | "overflow" | "manual";
				message: string;
			} | null;
		};
		/** CreateScheduleBody */
		CreateScheduleBody: {
			/** @description A cron expression: 5 fields (minute hour day month weekday), or 6 with seconds first; read in `timezone`. E.g. `"0 9 * * 1-5"`, `"*\/10 * * * * *"`. */
			cron?: string;
			/** @description A one-shot: the time to fire once, as an ISO 8601 date-time with an offset (`2026-12-24T09:00:00Z`). */
			at?: string;
			/** @description IANA timezone the cron expression is read in (default `"UTC"`). DST is followed. */
			timezone?: string;
			/** @description A new session per fire, from this agent profile (`""`: the server's defaults). Exactly one of `profile` and `sessionId`. */
			profile?: string;
			/** @description The session every fire prompts (through `ifBusy`). */
			sessionId?: string;
			/** @description The user message each fire sends. */
			prompt: string;
			/**
			 * @description With `sessionId`: what a fire does while the session runs — queue the prompt as a follow-up (default), skip the tick (recorded as skipped), or abort the run and prompt.
			 * @enum {string}
			 */
			ifBusy?: "followUp" | "skip" | "interrupt";
			/**
			 * @description Ticks that passed while no replica could fire (a restart, a takeover): record them as missed (default), or fire the newest once, late.
			 * @enum {string}
			 */
			missed?: "skip" | "once";
			/** @description Free-form string map; also set on the sessions fires create. */
			metadata?: {
				[key: string]: string;
			};
		};
		/** CreateSessionBody */
		CreateSessionBody: {
			/** @description Start from this agent profile of the server config (`profiles`): its settings, with the fields given here winning (metadata is merged). */
			profile?: string;
			/** @description `"provider/id"` of GET /v1/models. */
			model?: string;
			systemPrompt?: string;
			thinkingLevel?: components["schemas"]["ThinkingLevel"];
			/** @description Server tools to enable (GET /v1/tools): exact names and `prefix*` patterns, e.g. `"files__*"` for every tool of the MCP server `files`. Patterns also match tools registered later (an MCP server that connects or lists a new tool). Default `["*"]`: every server tool, current and future. */
			tools?: string[];
			toolExecution?: components["schemas"]["ToolExecution"];
			steeringMode?: components["schemas"]["QueueMode"];
			followUpMode?: components["schemas"]["QueueMode"];
			onInterrupt?: components["schemas"]["OnInterrupt"];
			compaction?: components["schemas"]["CompactionSettings"];
			budget?: components["schemas"]["SessionBudget"];
			/** @description Free-form string map. */
			metadata?: {
				[key: string]: string;
			};
			/** @description A transcript to start from. */
			messages?: components["schemas"]["AgentMessage"][];
			/**
			 * @description Who sees the session: `"owner"` (default) only its creator; `"tenant"` also everyone of the creator's tenant (the JWT's tenant claim, or the API key's `auth.keyTenants` entry). Others get 404 on every path.
			 * @enum {string}
			 */
			visibility?: "owner" | "tenant";
			/** @description Tools the client executes: a call waits (tool_result_requested) for POST .../tool-results/:toolCallId */
			clientTools?: components["schemas"]["ClientToolSpec"][];
			/** @description Approval policy per tool name (or `prefix*`) for this session; wins over the server config. "always" waits for POST .../approvals/:toolCallId */
			toolApprovals?: {
				[key: string]: "always" | "never";
			};
		};
		/** EditMessageBody */
		EditMessageBody: {
			content: components["schemas"]["MessageInput"];
			images?: components["schemas"]["ImageContent"][];
		};
		/** ElicitationAccepted */
		ElicitationAccepted: {
			elicitationId: string;
			/**
			 * @description Delivered to the MCP server; the tool call goes on.
			 * @enum {string}
			 */
			status: "accepted";
		};
		/** ElicitationAnswer */
		ElicitationAnswer: {
			/**
			 * @description "accept" sends `content`; "decline" says no; "cancel" dismisses the question
			 * @enum {string}
			 */
			action: "accept" | "decline" | "cancel";
			/** @description With "accept": a value per field of the requested schema, checked against it (400 naming the field when one does not fit) */
			content?: {
				[key: string]: string | number | boolean | string[];
			};
		};
		/**
		 * ErrorCode
		 * @description Stable error code (see docs/errors.md).
		 * @enum {string}
		 */
		ErrorCode:
			| "VALIDATION_FAILED"
			| "INVALID_JSON"
			| "JSON_TOO_DEEP"
			| "MALFORMED_REQUEST"
			| "INVALID_EVENT_ID"
			| "INVALID_IDEMPOTENCY_KEY"
			| "UNKNOWN_MODEL"
			| "MODEL_UNAVAILABLE"
			| "UNKNOWN_TOOL"
			| "UNKNOWN_PROFILE"
			| "UNAUTHORIZED"
			| "FORBIDDEN"
			| "INSUFFICIENT_SCOPE"
			| "NOT_FOUND"
			| "SESSION_NOT_FOUND"
			| "SCHEDULE_NOT_FOUND"
			| "MESSAGE_NOT_FOUND"
			| "TOOL_CALL_NOT_FOUND"
			| "RESPONSE_NOT_FOUND"
			| "ENDPOINT_OFF"
			| "THREAD_NOT_FOUND"
			| "METHOD_NOT_ALLOWED"
			| "NOT_ACCEPTABLE"
			| "REQUEST_TIMEOUT"
			| "ELICITATION_NOT_FOUND"
			| "ELICITATION_FINISHED"
			| "ELICITATION_INTERRUPTED"
			| "TOOL_CALL_FINISHED"
			| "AGENT_BUSY"
			| "CONTEXT_TOO_LARGE"
			| "BUDGET_EXHAUSTED"
			| "KEY_BUDGET_EXHAUSTED"
			| "TENANT_BUDGET_EXHAUSTED"
			| "USAGE_SCOPE_REQUIRED"
			| "INVALID_USAGE_RANGE"
			| "NOTHING_TO_COMPACT"
			| "COMPACTION_ABORTED"
			| "IDEMPOTENCY_IN_PROGRESS"
			| "PAYLOAD_TOO_LARGE"
			| "UNSUPPORTED_MEDIA_TYPE"
			| "NOTHING_TO_CONTINUE"
			| "NOTHING_TO_REGENERATE"
			| "CANNOT_CONTINUE_FROM_ASSISTANT"
			| "IDEMPOTENCY_KEY_REUSED"
			| "QUEUE_FULL"
			| "QUEUE_TOO_LARGE"
			| "TOO_MANY_SESSIONS"
			| "TOO_MANY_KEY_SESSIONS"
			| "TOO_MANY_STREAMS"
			| "RATE_LIMITED"
			| "TOO_MANY_RUNS"
			| "ADMISSION_TIMEOUT"
			| "HEADERS_TOO_LARGE"
			| "MODEL_ERROR"
			| "COMPACTION_FAILED"
			| "INTERNAL_ERROR"
			| "SHUTTING_DOWN"
			| "ABORT_NOT_DELIVERED"
			| "IDENTITY_PROVIDER_UNAVAILABLE"
			| "STORE_UNAVAILABLE";
		/**
		 * ErrorEnvelope
		 * @description Every error response.
		 */
		ErrorEnvelope: {
			error: {
				code: components["schemas"]["ErrorCode"];
				/** @description What went wrong and what to fix. */
				message: string;
				details?: unknown;
			};
		};
		/** ForkBody */
		ForkBody: {
			/** @description The last message the fork keeps: `wh-<index>` of the transcript (`GET /v1/sessions/:id/messages` pages by that index). Default: the whole transcript. */
			atMessageId?: string;
		};
		/** Health */
		Health: {
			status: string;
			unavailable?: string[];
		} & {
			[key: string]: unknown;
		};
		/** Identity */
		Identity: {
			/**
			 * @description How the caller authenticated; `none` when the server has no auth.
			 * @enum {string}
			 */
			kind: "key" | "jwt" | "none";
			/** @description The JWT's subject, or `key:<owner id>` for an API key; null without auth. */
			subject: string | null;
			/** @description The caller's tenant, if it has one. */
			tenant: string | null;
			/** @description The owner id its sessions are stored under (never a credential). */
			ownerId: string | null;
			/** @description The JWT's scopes; empty for an API key. */
			scopes: string[];
			/** @description When the JWT expires (ms since the epoch). */
			expiresAt?: number;
		};
		/**
		 * IfBusy
		 * @description While a run is active: `reject` (default) → 409 AGENT_BUSY; `steer` / `followUp` → queued, 202; `interrupt` → abort the run, then start this prompt.
		 * @enum {string}
		 */
		IfBusy: "reject" | "steer" | "followUp" | "interrupt";
		/** ImageContent */
		ImageContent: {
			/** @enum {string} */
			type: "image";
			/** @description Base64, without a data: prefix. */
			data: string;
			mimeType: string;
		};
		/** InteractionAccepted */
		InteractionAccepted: {
			toolCallId: string;
			/**
			 * @description Delivered to the waiting tool call; the run continues.
			 * @enum {string}
			 */
			status: "accepted";
		};
		/**
		 * KeyBudgetState
		 * @description The API key's budget (config `keyBudgets`) and what is left of it; null when the key has none.
		 */
		KeyBudgetState: {
			/**
			 * @description Calendar period, UTC.
			 * @enum {string}
			 */
			period: "day" | "month";
			/** @description First day of the current period (YYYY-MM-DD, UTC). */
			periodStart: string;
			maxTokens: number | null;
			maxCostUsd: number | null;
			maxTurnsPerRun: number | null;
			usedTokens: number;
			usedCostUsd: number;
			remainingTokens: number | null;
			remainingCostUsd: number | null;
			/** @description The limit reached: prompts are refused (429 KEY_BUDGET_EXHAUSTED) until the period ends. */
			exhausted: "maxTokens" | "maxCostUsd" | null;
		};
		/**
		 * MessageInput
		 * @description The text of a user message, or a full UserMessage.
		 */
		MessageInput: string | components["schemas"]["UserMessageInput"];
		/** MessagePage */
		MessagePage: {
			messages: components["schemas"]["AgentMessage"][];
			offset: number;
			total: number;
			/** @description Pass as `offset` for the next page; absent on the last. */
			nextOffset?: number;
			/** @description With `includeSuperseded=true`: the superseded branches, oldest first. */
			superseded?: {
				branch: number;
				fromMessageId: string;
				supersededAt: number;
				messageCount: number;
				messages: components["schemas"]["AgentMessage"][];
			}[];
		};
		/** MintClientTokenBody */
		MintClientTokenBody: {
			/** @description The one session the token opens. */
			sessionId: string;
			scopes: ("read" | "write" | "approve")[];
			/** @description Lifetime; capped by `auth.clientTokenTtlMs` (default 15 minutes) and by the minting JWT's expiry. */
			ttlSeconds?: number;
		};
		/** Model */
		Model: {
			/** @description `"provider/id"` */
			id: string;
			provider: string;
			modelId: string;
			name: string;
			api: string;
			reasoning: boolean;
			input: string[];
			contextWindow: number;
			maxTokens: number;
			cost: {
				[key: string]: unknown;
			};
			/** @description True for faux/echo: a scripted stand-in, not an LLM. */
			standIn: boolean;
			/** @description Whether a session can use it: the stand-in, a model whose server needs no key, or one whose provider has a key configured (sessions are refused the others: MODEL_UNAVAILABLE). */
			available: boolean;
		};
		/** ModelList */
		ModelList: {
			defaultModel: string;
			models: components["schemas"]["Model"][];
		};
		/**
		 * OnInterrupt
		 * @description What happens to a run the server process died during (a crash, a kill; in a cluster, the loss of its replica), once the server is back: `"continue"` (default) starts a new run from the last stored message by itself (a tool call that was in flight is run again only if its tool is declared idempotent; otherwise the model gets an error result saying the result was not recorded); `"stop"` leaves the session `interrupted` until POST /v1/sessions/:id/continue.
		 * @enum {string}
		 */
		OnInterrupt: "continue" | "stop";
		/**
		 * OpenAIError
		 * @description An error in OpenAI's shape.
		 */
		OpenAIError: {
			error: {
				message: string;
				/** @description invalid_request_error, authentication_error, not_found_error or server_error */
				type: string;
				param: null;
				/** @description Stable error code (see docs/errors.md). */
				code: string;
			};
		};
		/**
		 * PatchScheduleBody
		 * @description Only the given fields change. Giving `cron` makes a one-shot a cron schedule and the reverse with `at`; the next tick is computed again from now.
		 */
		PatchScheduleBody: {
			/** @description A cron expression: 5 fields (minute hour day month weekday), or 6 with seconds first; read in `timezone`. E.g. `"0 9 * * 1-5"`, `"*\/10 * * * * *"`. */
			cron?: string;
			/** @description A one-shot: the time to fire once, as an ISO 8601 date-time with an offset (`2026-12-24T09:00:00Z`). */
			at?: string;
			/** @description IANA timezone the cron expression is read in (default `"UTC"`). DST is followed. */
			timezone?: string;
			/** @description The user message each fire sends. */
			prompt?: string;
			/**
			 * @description With `sessionId`: what a fire does while the session runs — queue the prompt as a follow-up (default), skip the tick (recorded as skipped), or abort the run and prompt.
			 * @enum {string}
			 */
			ifBusy?: "followUp" | "skip" | "interrupt";
			/**
			 * @description Ticks that passed while no replica could fire (a restart, a takeover): record them as missed (default), or fire the newest once, late.
			 * @enum {string}
			 */
			missed?: "skip" | "once";
			/** @description Free-form string map; also set on the sessions fires create. */
			metadata?: {
				[key: string]: string;
			};
		};
		/**
		 * PatchSessionBody
		 * @description Fields to change (a field left out stays as it is). Model, system prompt and thinking level apply from the next model call, `toolApprovals` from the next tool call, the rest (`tools`, `clientTools`, modes) from the next run at the latest.
		 */
		PatchSessionBody: {
			/** @description `"provider/id"` of GET /v1/models. */
			model?: string;
			systemPrompt?: string;
			thinkingLevel?: components["schemas"]["ThinkingLevel"];
			/** @description Server tools to enable (GET /v1/tools): exact names and `prefix*` patterns, e.g. `"files__*"` for every tool of the MCP server `files`. Patterns also match tools registered later (an MCP server that connects or lists a new tool). Default `["*"]`: every server tool, current and future. */
			tools?: string[];
			toolExecution?: components["schemas"]["ToolExecution"];
			steeringMode?: components["schemas"]["QueueMode"];
			followUpMode?: components["schemas"]["QueueMode"];
			onInterrupt?: components["schemas"]["OnInterrupt"];
			compaction?: components["schemas"]["CompactionSettings"];
			budget?: components["schemas"]["SessionBudget"];
			metadata?: {
				[key: string]: string;
			};
			/** @description Tools the client executes: a call waits (tool_result_requested) for POST .../tool-results/:toolCallId */
			clientTools?: components["schemas"]["ClientToolSpec"][];
			/** @description Approval policy per tool name (or `prefix*`) for this session; wins over the server config. "always" waits for POST .../approvals/:toolCallId */
			toolApprovals?: {
				[key: string]: "always" | "never";
			};
		};
		/** PendingElicitation */
		PendingElicitation: {
			/** @description Answer with POST /v1/sessions/:id/elicitations/:elicitationId */
			elicitationId: string;
			/** @description The configured MCP server that asks */
			server: string;
			/** @description The tool call during which the server asks */
			toolCallId: string;
			toolName: string;
			/** @description The server's question, for the human */
			message: string;
			/** @description A flat JSON Schema object of primitive fields (string, number, integer, boolean, enum) */
			requestedSchema: unknown;
			createdAt: number;
			/** @description When the wait times out (epoch ms); the server then gets `cancel` */
			expiresAt: number;
			/** @description Left by a previous server process; can no longer be answered */
			orphaned?: boolean;
		};
		/** PendingToolCall */
		PendingToolCall: {
			toolCallId: string;
			toolName: string;
			args: unknown;
			createdAt: number;
			/** @description When the wait times out (epoch ms) */
			expiresAt: number;
			/** @description Left by a previous server process; can no longer be answered */
			orphaned?: boolean;
		};
		/**
		 * PiProxyError
		 * @description An error, in the shape pi's streamProxy reads: a string `error`.
		 */
		PiProxyError: {
			/** @description What went wrong and what to fix. */
			error: string;
			/** @description Stable error code (see docs/errors.md). */
			code: string;
		};
		/** PromptBody */
		PromptBody: {
			message: components["schemas"]["MessageInput"];
			images?: components["schemas"]["ImageContent"][];
			ifBusy?: components["schemas"]["IfBusy"];
		};
		/** QueueBody */
		QueueBody: {
			message: components["schemas"]["MessageInput"];
			images?: components["schemas"]["ImageContent"][];
		};
		/**
		 * QueueMode
		 * @description How many queued messages one poll delivers.
		 * @enum {string}
		 */
		QueueMode: "all" | "one-at-a-time";
		/**
		 * QueuedAccepted
		 * @description The message is stored in the queue.
		 */
		QueuedAccepted: {
			/** @enum {string} */
			status: "queued";
			/** @enum {string} */
			queue: "steer" | "followUp";
			queuedId: number;
			/** @description Messages in that queue now, this one included. */
			queueLength: number;
			/** @description True when no run is active: the message waits for the next run. */
			idle: boolean;
			note: string;
		};
		/** QueuedMessage */
		QueuedMessage: {
			id: number;
			message: components["schemas"]["AgentMessage"];
			createdAt: number;
		};
		/** RewindBody */
		RewindBody: {
			/** @description The last message the transcript keeps (`wh-<index>`); the messages after it become a superseded branch. */
			toMessageId: string;
		};
		/** RewindResult */
		RewindResult: {
			/** @description The run that made the cut (it has no agent events). */
			runId: string;
			/** @description The live transcript's length now. */
			messageCount: number;
			branch: components["schemas"]["SupersededBranch"];
		};
		/**
		 * RunAccepted
		 * @description The run started; follow it on GET /v1/sessions/:id/events.
		 */
		RunAccepted: {
			/** @enum {string} */
			status: "started";
			runId: string;
			/** @description Id of the run's `agent_start`: resume `/events` with `after = firstEventId - 1`. */
			firstEventId: number;
		};
		/**
		 * RunWaiting
		 * @description Your tenant or API key has every run slot taken (`auth.admission: "queue"`): the run is stored and starts when a slot frees. Follow it on GET /v1/sessions/:id/events: `run_queued`, then its `agent_start`.
		 */
		RunWaiting: {
			/** @enum {string} */
			status: "waiting";
			/** @enum {boolean} */
			queued: true;
			/** @description 1 + the runs of your tenant (of your API key or user without one) waiting ahead of this one. */
			position: number;
			admissionId: number;
			note: string;
		};
		/** Schedule */
		Schedule: {
			id: string;
			cron: string | null;
			at: number | null;
			timezone: string;
			profile: string | null;
			sessionId: string | null;
			prompt: string;
			/**
			 * @description With `sessionId`: what a fire does while the session runs — queue the prompt as a follow-up (default), skip the tick (recorded as skipped), or abort the run and prompt.
			 * @enum {string}
			 */
			ifBusy: "followUp" | "skip" | "interrupt";
			/**
			 * @description Ticks that passed while no replica could fire (a restart, a takeover): record them as missed (default), or fire the newest once, late.
			 * @enum {string}
			 */
			missed: "skip" | "once";
			metadata: {
				[key: string]: string;
			};
			/** @enum {string} */
			state: "active" | "paused" | "done";
			nextFireAt: number | null;
			lastFireAt: number | null;
			createdAt: number;
			updatedAt: number;
		};
		/** ScheduleFire */
		ScheduleFire: {
			id: number;
			scheduleId: string;
			/** @enum {string} */
			kind: "tick" | "catch_up" | "manual";
			/** @description The tick it belongs to (a manual fire: when it was asked for), epoch ms. */
			tickAt: number;
			/** @enum {string} */
			outcome: "firing" | "fired" | "skipped" | "missed" | "failed";
			sessionId: string | null;
			runId: string | null;
			reason: string | null;
			createdAt: number;
			settledAt: number | null;
		};
		/** ScheduleFireList */
		ScheduleFireList: {
			fires: components["schemas"]["ScheduleFire"][];
			/** @description Pass as `?before=` for older fires. */
			nextBefore?: number;
		};
		/** ScheduleList */
		ScheduleList: {
			schedules: components["schemas"]["Schedule"][];
			nextCursor?: string;
		};
		/**
		 * Session
		 * @description A session's config and live state.
		 */
		Session: {
			id: string;
			createdAt: number;
			updatedAt: number;
			model: string;
			systemPrompt: string;
			thinkingLevel: string;
			/** @description The session's tool selectors, as configured */
			tools: string[];
			/** @description Names of the tools the model is offered from the next run: the server tools `tools` selects, then client-side tools */
			activeTools: string[];
			toolExecution: string;
			steeringMode: string;
			followUpMode: string;
			onInterrupt: components["schemas"]["OnInterrupt"];
			metadata: {
				[key: string]: string;
			};
			/**
			 * @description `"owner"`: only its creator sees it; `"tenant"`: everyone of `tenant` too.
			 * @enum {string}
			 */
			visibility: "owner" | "tenant";
			/** @description The tenant of the session's owner when it was created; null without one. */
			tenant: string | null;
			/** @enum {string} */
			status: "idle" | "running" | "interrupted";
			interruptedAt: number | null;
			runId: string | null;
			isStreaming: boolean;
			pendingToolCalls: string[];
			errorMessage: string | null;
			queue: {
				steering: components["schemas"]["QueuedMessage"][];
				followUp: components["schemas"]["QueuedMessage"][];
				steeringCount: number;
				followUpCount: number;
			};
			messageCount: number;
			/** @description Id of the last event on the session's stream (0 before any). */
			lastEventId: number;
			usage: components["schemas"]["Usage"];
			/** @description Tool calls waiting for approval */
			pendingApprovals?: components["schemas"]["PendingToolCall"][];
			/** @description Client tool calls waiting for a result */
			pendingClientToolCalls?: components["schemas"]["PendingToolCall"][];
			/** @description Questions MCP servers ask during the session's tool calls, waiting for an answer */
			pendingElicitations?: components["schemas"]["PendingElicitation"][];
			clientTools?: components["schemas"]["ClientToolSpec"][];
			toolApprovals?: {
				[key: string]: "always" | "never";
			};
			compaction?: components["schemas"]["CompactionState"];
			budget?: components["schemas"]["SessionBudgetState"];
			keyBudget?: components["schemas"]["KeyBudgetState"] | null;
			tenantBudget?: components["schemas"]["TenantBudgetState"] | null;
		} & {
			[key: string]: unknown;
		};
		/**
		 * SessionBudget
		 * @description Spending limits of this session, checked before each model call: a run that reaches one ends (its last message names the limit), and a prompt on a spent budget is refused (409 BUDGET_EXHAUSTED). The object replaces the previous one; a field left out is no limit.
		 */
		SessionBudget: {
			/** @description Tokens the session may use in all (input, output and cache). */
			maxTokens?: number;
			/** @description US dollars the session may spend, at the model's prices. */
			maxCostUsd?: number;
			/** @description Model calls one run may make. */
			maxTurnsPerRun?: number;
		};
		/**
		 * SessionBudgetState
		 * @description The session's budget and what is left of it.
		 */
		SessionBudgetState: {
			maxTokens: number | null;
			maxCostUsd: number | null;
			maxTurnsPerRun: number | null;
			usedTokens: number;
			usedCostUsd: number;
			remainingTokens: number | null;
			remainingCostUsd: number | null;
			turnsThisRun: number | null;
			/** @description The limit reached: prompts are refused (409 BUDGET_EXHAUSTED) until it is raised. */
			exhausted: "maxTokens" | "maxCostUsd" | null;
		};
		/** SessionList */
		SessionList: {
			sessions: components["schemas"]["SessionSummary"][];
			/** @description Pass as `cursor` for the next page; absent on the last. */
			nextCursor?: string;
		};
		/** SessionSummary */
		SessionSummary: {
			id: string;
			createdAt: number;
			updatedAt: number;
			lastActiveAt: number;
			model: string;
			status: string;
			messageCount: number;
			metadata: {
				[key: string]: string;
			};
			/**
			 * @description `"owner"`: only its creator sees it; `"tenant"`: everyone of `tenant` too.
			 * @enum {string}
			 */
			visibility: "owner" | "tenant";
			/** @description The tenant of the session's owner when it was created; null without one. */
			tenant: string | null;
		};
		/** StreamToken */
		StreamToken: {
			/** @description Pass as `?token=` to GET /v1/sessions/:id/events of this session only. */
			token: string;
			/** @description Milliseconds since the epoch after which the token opens no stream (a stream already open stays open). */
			expiresAt: number;
			/** @description The session's events path with the token, ready for `new EventSource()`. */
			eventsUrl: string;
		};
		/** SupersededBranch */
		SupersededBranch: {
			/** @description The session's rewinds in order: 1 for its first. */
			branch: number;
			/** @description The id (`wh-<index>`) the branch's first message had; the live transcript was cut before it. */
			fromMessageId: string;
			/** @description When the rewind was stored (epoch ms). */
			supersededAt: number;
			messageCount: number;
			messages: components["schemas"]["AgentMessage"][];
		};
		/**
		 * SupersededBranchList
		 * @description The session's superseded branches, oldest first.
		 */
		SupersededBranchList: {
			branches: components["schemas"]["SupersededBranch"][];
		};
		/**
		 * TenantBudgetState
		 * @description The tenant's budget (config `auth.tenantBudgets`) and what is left of it; null when the tenant has none (or the caller has no tenant).
		 */
		TenantBudgetState: {
			tenant: string;
			/**
			 * @description Calendar period, UTC.
			 * @enum {string}
			 */
			period: "day" | "month";
			/** @description First day of the current period (YYYY-MM-DD, UTC). */
			periodStart: string;
			maxTokens: number | null;
			maxCostUsd: number | null;
			/** @description Every caller's of the tenant, as last read from the store. */
			usedTokens: number;
			usedCostUsd: number;
			remainingTokens: number | null;
			remainingCostUsd: number | null;
			/** @description The limit reached: runs are refused (429 TENANT_BUDGET_EXHAUSTED) until the period ends. */
			exhausted: "maxTokens" | "maxCostUsd" | null;
		};
		/** TextContent */
		TextContent: {
			/** @enum {string} */
			type: "text";
			text: string;
		} & {
			[key: string]: unknown;
		};
		/**
		 * ThinkingLevel
		 * @description Reasoning level; `off` sends none.
		 * @enum {string}
		 */
		ThinkingLevel: "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
		/** Tool */
		Tool: {
			name: string;
			label: string;
			description: string;
			parameters: {
				[key: string]: unknown;
			};
			/** @description Where the tool comes from: builtin, library, module, mcp, http, ... */
			origin: string;
			/** @description Declared safe to run again with the same arguments: a call cut short by the death of the server process runs again when its session continues (otherwise the model gets an error result). */
			idempotent: boolean;
		} & {
			[key: string]: unknown;
		};
		/**
		 * ToolExecution
		 * @enum {string}
		 */
		ToolExecution: "parallel" | "sequential";
		/** ToolList */
		ToolList: {
			tools: components["schemas"]["Tool"][];
		};
		/**
		 * Usage
		 * @description Token usage and cost in USD.
		 */
		Usage: {
			input: number;
			output: number;
			cacheRead: number;
			cacheWrite: number;
			totalTokens: number;
			cost: {
				total: number;
			} & {
				[key: string]: unknown;
			};
		} & {
			[key: string]: unknown;
		};
		/**
		 * UsageReport
		 * @description The caller's usage (or its tenant's) by day and by model, from the messages that spent it, and the budgets of the caller's key and tenant.
		 */
		UsageReport: {
			/** @description The caller's key (its owner id, never the key); null with auth off. */
			ownerId: string | null;
			/**
			 * @description Whose usage: the caller's own, or its whole tenant's.
			 * @enum {string}
			 */
			scope: "own" | "tenant";
			/** @description The caller's tenant; null without one. */
			tenant: string | null;
			from: string;
			to: string;
			total: {
				input: number;
				output: number;
				cacheRead: number;
				cacheWrite: number;
				totalTokens: number;
				/** @description USD, from the model's prices. */
				costUsd: number;
				/** @description Model calls of runs (a compaction's summary call adds usage, not a turn). */
				turns: number;
			};
			byDay: {
				day: string;
				input: number;
				output: number;
				cacheRead: number;
				cacheWrite: number;
				totalTokens: number;
				/** @description USD, from the model's prices. */
				costUsd: number;
				/** @description Model calls of runs (a compaction's summary call adds usage, not a turn). */
				turns: number;
			}[];
			byModel: {
				provider: string;
				model: string;
				input: number;
				output: number;
				cacheRead: number;
				cacheWrite: number;
				totalTokens: number;
				/** @description USD, from the model's prices. */
				costUsd: number;
				/** @description Model calls of runs (a compaction's summary call adds usage, not a turn). */
				turns: number;
			}[];
			/** @description `scope=tenant` only: each owner id of the tenant (never a credential), most spent first. */
			byOwner?: {
				ownerId: string;
				input: number;
				output: number;
				cacheRead: number;
				cacheWrite: number;
				totalTokens: number;
				/** @description USD, from the model's prices. */
				costUsd: number;
				/** @description Model calls of runs (a compaction's summary call adds usage, not a turn). */
				turns: number;
			}[];
			/** @description One row per day and model. */
			rows: {
				day: string;
				provider: string;
				model: string;
				input: number;
				output: number;
				cacheRead: number;
				cacheWrite: number;
				totalTokens: number;
				/** @description USD, from the model's prices. */
				costUsd: number;
				/** @description Model calls of runs (a compaction's summary call adds usage, not a turn). */
				turns: number;
			}[];
			budget: components["schemas"]["KeyBudgetState"] | null;
			tenantBudget: components["schemas"]["TenantBudgetState"] | null;
		};
		/**
		 * UserMessageInput
		 * @description A pi-ai UserMessage; `timestamp` defaults to now.
		 */
		UserMessageInput: {
			/** @enum {string} */
			role: "user";
			content: string | (components["schemas"]["TextContent"] | components["schemas"]["ImageContent"])[];
			timestamp?: number;
		};
	};
	responses: {
		/** @description Every error response. */
		ErrorEnvelope: {
			headers: {
				[name: string]: unknown;
			};
			content: {
				"application/json": components["schemas"]["ErrorEnvelope"];
			};
		};
		/** @description An error in OpenAI's shape. */
		OpenAIError: {
			headers: {
				[name: string]: unknown;
			};
			content: {
				"application/json": components["schemas"]["OpenAIError"];
			};
		};
		/** @description An error, in the shape pi's streamProxy reads: a string `error`. */
		PiProxyError: {
			headers: {
				[name: string]: unknown;
			};
			content: {
				"application/json": components["schemas"]["PiProxyError"];
			};
		};
	};
	parameters: never;
	requestBodies: never;
	headers: never;
	pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
	getOpenapiJson: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description The OpenAPI 3.1 document. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						[key: string]: unknown;
					};
				};
			};
		};
	};
	getMetrics: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description Prometheus text exposition format (version 0.0.4). */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/plain": string;
				};
			};
		};
	};
	getHealthz: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Health"];
				};
			};
		};
	};
	getReadyz: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Health"];
				};
			};
			/** @description Service Unavailable */
			503: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Health"];
				};
			};
		};
	};
	getModels: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["ModelList"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getTools: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["ToolList"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getSessions: {
		parameters: {
			query?: {
				cursor?: string;
				limit?: number;
				/** @description Only sessions with this run status. */
				status?: "idle" | "running" | "interrupted";
				/** @description Only sessions created from this agent profile. */
				profile?: string;
				/** @description Only sessions whose config changed after this time (epoch ms). */
				updatedAfter?: number;
				/** @description Only sessions whose config last changed before this time (epoch ms). */
				updatedBefore?: number;
			};
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["SessionList"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessions: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["CreateSessionBody"];
			};
		};
		responses: {
			/** @description A session's config and live state. */
			201: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Session"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getSessionsById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description A session's config and live state. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Session"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	deleteSessionsById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						deleted: boolean;
						id: string;
					};
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	patchSessionsById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		/** @description Fields to change (a field left out stays as it is). Model, system prompt and thinking level apply from the next model call, `toolApprovals` from the next tool call, the rest (`tools`, `clientTools`, modes) from the next run at the latest. */
		requestBody: {
			content: {
				"application/json": components["schemas"]["PatchSessionBody"];
			};
		};
		responses: {
			/** @description A session's config and live state. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Session"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getSessionsByIdMessages: {
		parameters: {
			query?: {
				offset?: number;
				limit?: number;
				/** @description Also list the superseded branches (what rewinds, regenerates and edits took off the transcript) as `superseded`, as `GET /v1/sessions/:id/branches` does. */
				includeSuperseded?: boolean;
			};
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["MessagePage"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdPrompt: {
		parameters: {
			query?: never;
			header?: {
				/** @description 1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`. */
				"idempotency-key"?: string;
			};
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["PromptBody"];
			};
		};
		responses: {
			/** @description With `Accept: text/event-stream`: the SSE stream of this run, `agent_start` to `agent_end`. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
				};
			};
			/** @description Accepted */
			202: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json":
						| components["schemas"]["RunAccepted"]
						| components["schemas"]["QueuedAccepted"]
						| components["schemas"]["RunWaiting"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdContinue: {
		parameters: {
			query?: never;
			header?: {
				/** @description 1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`. */
				"idempotency-key"?: string;
			};
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description With `Accept: text/event-stream`: the SSE stream of this run, `agent_start` to `agent_end`. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
				};
			};
			/** @description The run started; follow it on GET /v1/sessions/:id/events. */
			202: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["RunAccepted"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdSteer: {
		parameters: {
			query?: never;
			header?: {
				/** @description 1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`. */
				"idempotency-key"?: string;
			};
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["QueueBody"];
			};
		};
		responses: {
			/** @description The message is stored in the queue. */
			202: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["QueuedAccepted"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdFollowUp: {
		parameters: {
			query?: never;
			header?: {
				/** @description 1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`. */
				"idempotency-key"?: string;
			};
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["QueueBody"];
			};
		};
		responses: {
			/** @description The message is stored in the queue. */
			202: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["QueuedAccepted"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	deleteSessionsByIdQueue: {
		parameters: {
			query?: {
				kind?: "steer" | "followUp";
			};
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["ClearQueueResult"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdAbort: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["AbortResult"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdFork: {
		parameters: {
			query?: never;
			header?: {
				/** @description 1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`. */
				"idempotency-key"?: string;
			};
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["ForkBody"];
			};
		};
		responses: {
			/** @description A session's config and live state. */
			201: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Session"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdRewind: {
		parameters: {
			query?: never;
			header?: {
				/** @description 1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`. */
				"idempotency-key"?: string;
			};
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["RewindBody"];
			};
		};
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["RewindResult"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdRegenerate: {
		parameters: {
			query?: never;
			header?: {
				/** @description 1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`. */
				"idempotency-key"?: string;
			};
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description With `Accept: text/event-stream`: the SSE stream of this run, `agent_start` to `agent_end`. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
				};
			};
			/** @description The run started; follow it on GET /v1/sessions/:id/events. */
			202: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["RunAccepted"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	patchSessionsByIdMessagesById: {
		parameters: {
			query?: never;
			header?: {
				/** @description 1–255 printable ASCII characters (a UUID per logical request is a good key). A repeat of the request with the same key on the same session, within 24 h, gets the first one's outcome instead of being carried out again: the same status and body, or for a run asked for as SSE, that run's stream after `Last-Event-ID` (from its first event without one). The same key with another body or route: 422 `IDEMPOTENCY_KEY_REUSED`; while the first is still being processed: 409 `IDEMPOTENCY_IN_PROGRESS`. A refused request (4xx) is not recorded. A repeat's response has the header `Idempotent-Replayed: true`. */
				"idempotency-key"?: string;
			};
			path: {
				id: string;
				/** @description The user message to replace (`wh-<index>`). */
				messageId: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["EditMessageBody"];
			};
		};
		responses: {
			/** @description With `Accept: text/event-stream`: the SSE stream of this run, `agent_start` to `agent_end`. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
				};
			};
			/** @description The run started; follow it on GET /v1/sessions/:id/events. */
			202: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["RunAccepted"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getSessionsByIdBranches: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description The session's superseded branches, oldest first. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["SupersededBranchList"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getSessionsByIdEvents: {
		parameters: {
			query?: {
				/** @description Resume after this event id (same as the Last-Event-ID header, which wins). */
				after?: string;
				/** @description A stream token from POST /v1/sessions/:id/stream-token, or a client token with the `read` scope from POST /v1/tokens, in place of the Authorization header (for EventSource). Checked when the stream opens. */
				token?: string;
			};
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description With `Accept: text/event-stream`: the SSE stream of this run, `agent_start` to `agent_end`. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdStreamToken: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["StreamToken"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getMe: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Identity"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postTokens: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["MintClientTokenBody"];
			};
		};
		responses: {
			/** @description Created */
			201: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["ClientToken"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdCompact: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": {
					/** @description What the summary should focus on or keep, added to the summary request. */
					instructions?: string;
					/** @description Tokens of recent messages to keep verbatim this time (default: the session's setting). 0 keeps only the latest turn. */
					keepRecentTokens?: number;
				};
			};
		};
		responses: {
			/** @description The compaction is done and stored; the next model call sees the summary and the kept messages. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						/** @enum {boolean} */
						compacted: true;
						/** @description Index of the compaction message in the transcript. */
						messageIndex: number;
						/** @description Estimated tokens of the context before. */
						tokensBefore: number;
						/** @description Estimated tokens of the context after: the summary and the kept messages. */
						tokensAfter: number;
						message: components["schemas"]["AgentMessage"];
					};
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getUsage: {
		parameters: {
			query?: {
				/** @description First day, YYYY-MM-DD (UTC). Default: the 1st of the month of `to`. */
				from?: string;
				/** @description Last day, YYYY-MM-DD (UTC), inclusive. Default: today. */
				to?: string;
				/** @description `own` (default): the caller's own usage. `tenant`: every caller's of the caller's tenant (by owner too); needs a JWT with the scope `auth.usageAdminScope` (default `usage:tenant`) or an API key of `auth.usageAdminKeys`, else 403 USAGE_SCOPE_REQUIRED. */
				scope?: "own" | "tenant";
			};
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description The caller's usage (or its tenant's) by day and by model, from the messages that spent it, and the budgets of the caller's key and tenant. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["UsageReport"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getSchedules: {
		parameters: {
			query?: {
				cursor?: string;
				limit?: number;
			};
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["ScheduleList"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSchedules: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["CreateScheduleBody"];
			};
		};
		responses: {
			/** @description Created */
			201: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Schedule"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getSchedulesById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Schedule"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	deleteSchedulesById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						deleted: boolean;
						id: string;
					};
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	patchSchedulesById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		/** @description Only the given fields change. Giving `cron` makes a one-shot a cron schedule and the reverse with `at`; the next tick is computed again from now. */
		requestBody: {
			content: {
				"application/json": components["schemas"]["PatchScheduleBody"];
			};
		};
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Schedule"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSchedulesByIdPause: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Schedule"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSchedulesByIdResume: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Schedule"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSchedulesByIdRunNow: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description Accepted */
			202: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["ScheduleFire"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getSchedulesByIdFires: {
		parameters: {
			query?: {
				before?: number;
				limit?: number;
			};
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["ScheduleFireList"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdToolResultsById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
				toolCallId: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["ClientToolResult"];
			};
		};
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["InteractionAccepted"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdApprovalsById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
				toolCallId: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["ApprovalDecision"];
			};
		};
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["InteractionAccepted"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postSessionsByIdElicitationsById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
				elicitationId: string;
			};
			cookie?: never;
		};
		requestBody: {
			content: {
				"application/json": components["schemas"]["ElicitationAnswer"];
			};
		};
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["ElicitationAccepted"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	putSessionsByIdToolDeclarations: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		/** @description Fields to change; a field left out stays as it is. */
		requestBody: {
			content: {
				"application/json": {
					/** @description Tools the client executes: a call waits (tool_result_requested) for POST .../tool-results/:toolCallId */
					clientTools?: components["schemas"]["ClientToolSpec"][];
					/** @description Approval policy per tool name (or `prefix*`) for this session; wins over the server config. "always" waits for POST .../approvals/:toolCallId */
					toolApprovals?: {
						[key: string]: "always" | "never";
					};
				};
			};
		};
		responses: {
			/** @description A session's config and live state. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["Session"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getToolsMcpServers: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						servers: {
							name: string;
							/** @enum {string} */
							transport: "stdio" | "http";
							/** @enum {string} */
							state: "connecting" | "connected" | "failed" | "stopped";
							/** @description Reconnect attempt in progress (0 while connected) */
							attempt: number;
							lastError?: string;
							toolCount: number;
							connectedAt?: number;
							serverInfo?: {
								name: string;
								version: string;
							};
							/** @description Names of its tools as sessions see them (server__tool) */
							tools: string[];
							/** @description Tools the server lists that sessions are not given (name on the server, and why), e.g. ones that require task-based execution */
							skippedTools?: {
								name: string;
								reason: string;
							}[];
						}[];
					};
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getOpenaiModels: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						/** @enum {string} */
						object: "list";
						data: {
							/** @description "provider/id" of a model, or the name of an agent profile */
							id: string;
							/** @enum {string} */
							object: "model";
							created: number;
							/** @description The provider, or "wheelhouse-profile" for an agent profile */
							owned_by: string;
						}[];
					};
				};
			};
			"4XX": components["responses"]["OpenAIError"];
			"5XX": components["responses"]["OpenAIError"];
		};
	};
	postOpenaiChatCompletions: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** @description A Chat Completions request (other fields are accepted and ignored). */
		requestBody: {
			content: {
				"application/json": {
					/** @description A Wheelhouse model, "provider/id", or the name of an agent profile of the server config (GET /openai/v1/models lists both). */
					model: string;
					/** @description The conversation; it ends with a user message, or with the results of the client tools called */
					messages: ({
						role: string;
					} & {
						[key: string]: unknown;
					})[];
					stream?: boolean;
					stream_options?: {
						include_usage?: boolean;
					} & {
						[key: string]: unknown;
					};
					/** @description Function tools the client executes: the model's calls come back as tool_calls */
					tools?: ({
						type: string;
					} & {
						[key: string]: unknown;
					})[];
				} & {
					[key: string]: unknown;
				};
			};
		};
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json":
						| ({
								id: string;
								/** @enum {string} */
								object: "chat.completion";
								created: number;
								model: string;
								choices: {
									[key: string]: unknown;
								}[];
								usage: {
									[key: string]: unknown;
								};
						  } & {
								[key: string]: unknown;
						  })
						| unknown;
				};
			};
			"4XX": components["responses"]["OpenAIError"];
			"5XX": components["responses"]["OpenAIError"];
		};
	};
	postOpenaiResponses: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** @description A Responses request (other fields are accepted and ignored). */
		requestBody: {
			content: {
				"application/json": {
					/** @description A Wheelhouse model, "provider/id", or the name of an agent profile of the server config (GET /openai/v1/models lists both). */
					model: string;
					input:
						| string
						| {
								[key: string]: unknown;
						  }[];
					instructions?: string | null;
					/** @description Continues the session of that response. */
					previous_response_id?: string | null;
					stream?: boolean;
					tools?: ({
						type: string;
					} & {
						[key: string]: unknown;
					})[];
					metadata?: {
						[key: string]: string;
					};
				} & {
					[key: string]: unknown;
				};
			};
		};
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json":
						| ({
								id: string;
								/** @enum {string} */
								object: "response";
								status: string;
								model: string;
								output: {
									[key: string]: unknown;
								}[];
						  } & {
								[key: string]: unknown;
						  })
						| unknown;
				};
			};
			"4XX": components["responses"]["OpenAIError"];
			"5XX": components["responses"]["OpenAIError"];
		};
	};
	getOpenaiResponsesById: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description A response. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						id: string;
						/** @enum {string} */
						object: "response";
						status: string;
						model: string;
						output: {
							[key: string]: unknown;
						}[];
					} & {
						[key: string]: unknown;
					};
				};
			};
			"4XX": components["responses"]["OpenAIError"];
			"5XX": components["responses"]["OpenAIError"];
		};
	};
	postOpenaiResponsesByIdCancel: {
		parameters: {
			query?: never;
			header?: never;
			path: {
				id: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description A response. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						id: string;
						/** @enum {string} */
						object: "response";
						status: string;
						model: string;
						output: {
							[key: string]: unknown;
						}[];
					} & {
						[key: string]: unknown;
					};
				};
			};
			"4XX": components["responses"]["OpenAIError"];
			"5XX": components["responses"]["OpenAIError"];
		};
	};
	postAguiRun: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** @description An AG-UI RunAgentInput (protocol 1.0). */
		requestBody: {
			content: {
				"application/json": {
					/** @description The conversation: a Wheelhouse session, created on the first run (or a session id, ses_...) */
					threadId: string;
					/** @description The client's id of this run, echoed in RUN_STARTED and RUN_FINISHED */
					runId: string;
					parentRunId?: string;
					/** @description The AG-UI protocol the client speaks (`@ag-ui/client` 1.0 sends "1.0"). Absent or below 1: events in the shape clients before 1.0 accept (no `RUN_FINISHED.outcome`, tool results as text) */
					protocolVersion?: string;
					/** @description Shared state: kept for the thread and shown to the model */
					state?: unknown;
					/** @description The whole conversation; what follows the last assistant message is new (user messages, tool results) */
					messages: ({
						id: string;
						role: string;
					} & {
						[key: string]: unknown;
					})[];
					/** @description Tools the client executes: a call ends the run with its id pending */
					tools?: ({
						/** @description 1 to 64 letters, digits, _ or - */
						name: string;
						description: string;
						parameters?: unknown;
					} & {
						[key: string]: unknown;
					})[];
					/** @description Shown to the model for this run */
					context?: ({
						description: string;
						value: string;
					} & {
						[key: string]: unknown;
					})[];
					/** @description Ignored but for `wheelhouse` */
					forwardedProps?: {
						/** @description Wheelhouse settings of the thread's session */
						wheelhouse?: {
							/** @description An agent profile of the server config: its settings apply to the thread's session (the fields beside it win) */
							profile?: string;
							/** @description "provider/id" (see GET /v1/models) */
							model?: string;
							thinkingLevel?: components["schemas"]["ThinkingLevel"];
							/** @description Server tools of the thread's session (names or "prefix*"); default every server tool */
							tools?: string[];
						};
					} & {
						[key: string]: unknown;
					};
					/** @description Not supported: this server sends no interrupts (approvals are CUSTOM events) */
					resume?: unknown[];
				} & {
					[key: string]: unknown;
				};
			};
		};
		responses: {
			/** @description AG-UI events as Server-Sent Events: one `data:` line of JSON per event, as @ag-ui/client reads them. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getAguiThreadsByIdEvents: {
		parameters: {
			query?: {
				/** @description The AG-UI protocol the client speaks; default "1.0". Below 1 (e.g. "0.0.59"): events in the shape clients before 1.0 accept */
				protocolVersion?: string;
			};
			header?: never;
			path: {
				/** @description The thread (see RunAgentInput.threadId) */
				threadId: string;
			};
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description AG-UI events as Server-Sent Events: one `data:` line of JSON per event, as @ag-ui/client reads them. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	getWellKnownAgentCardJson: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description OK */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": components["schemas"]["A2AAgentCard"];
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postA2a: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description A JSON-RPC 2.0 response (`result` or `error`, HTTP 200 either way); for SendStreamingMessage and SubscribeToTask a Server-Sent Events stream of JSON-RPC responses whose `result` is a StreamResponse. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"application/json": {
						[key: string]: unknown;
					};
					"text/event-stream": string;
				};
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postMcp: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		requestBody?: never;
		responses: {
			/** @description The JSON-RPC answers to the request's messages: a Server-Sent Events stream (progress notifications, then the result), as MCP's Streamable HTTP transport sends them. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
					"application/json": {
						[key: string]: unknown;
					};
				};
			};
			/** @description Notifications and responses only: accepted, nothing to answer. */
			202: {
				headers: {
					[name: string]: unknown;
				};
				content?: never;
			};
			"4XX": components["responses"]["ErrorEnvelope"];
			"5XX": components["responses"]["ErrorEnvelope"];
		};
	};
	postApiStream: {
		parameters: {
			query?: never;
			header?: never;
			path?: never;
			cookie?: never;
		};
		/** @description What pi's streamProxy sends. */
		requestBody: {
			content: {
				"application/json": {
					/** @description A pi-ai Model; the server uses its own model with this provider and id (GET /v1/models): `baseUrl`, `headers` and every other field sent are ignored. */
					model: {
						provider: string;
						id: string;
					} & {
						[key: string]: unknown;
					};
					/** @description A pi-ai Context. */
					context: {
						systemPrompt?: string;
						/** @description pi-ai messages. */
						messages: ({
							role: string;
						} & {
							[key: string]: unknown;
						})[];
						tools?: ({
							name: string;
							description: string;
							parameters: {
								[key: string]: unknown;
							};
						} & {
							[key: string]: unknown;
						})[];
					} & {
						[key: string]: unknown;
					};
					/** @description Stream options; `headers`, and any API key, are ignored. */
					options?: {
						temperature?: number;
						maxTokens?: number;
						/** @enum {string} */
						reasoning?: "minimal" | "low" | "medium" | "high" | "xhigh";
						/** @enum {string} */
						cacheRetention?: "none" | "short" | "long";
						sessionId?: string;
						/** @enum {string} */
						transport?: "sse" | "websocket" | "websocket-cached" | "auto";
						thinkingBudgets?: {
							minimal?: number;
							low?: number;
							medium?: number;
							high?: number;
						};
						maxRetryDelayMs?: number;
						metadata?: {
							[key: string]: unknown;
						};
						/** @description Ignored: the server sends its own headers. */
						headers?: {
							[key: string]: string;
						};
					} & {
						[key: string]: unknown;
					};
				} & {
					[key: string]: unknown;
				};
			};
		};
		responses: {
			/** @description Server-Sent Events, `data: <json>` lines only: `start`, then `text_*`, `thinking_*`, `toolcall_*` events, then exactly one `done` or `error`. */
			200: {
				headers: {
					[name: string]: unknown;
				};
				content: {
					"text/event-stream": string;
				};
			};
			"4XX": components["responses"]["PiProxyError"];
			"5XX": components["responses"]["PiProxyError"];
		};
	};
}
