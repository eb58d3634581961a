/**
 * What a client token may do: the routes each scope opens, by method and route pattern (the route
 * the router matched, never the URL text). A client token opens these routes on its one session
 * (the `:id` of the route) and nothing else: every other route, and these on another session, are
 * 403 `TOKEN_SCOPE`. The table is the whole list: a route added later is closed to client tokens
 * until it is named here.
 */

/** `read`: the session, its transcript and events. `write`: prompt, continue, steer, follow-up, abort, queue, client tool results. `approve`: tool approvals and answers to MCP servers' questions (elicitations). */
export type ClientScope = "read" | "write" | "approve";

export const CLIENT_SCOPES: readonly ClientScope[] = ["read", "write", "approve"];

const ROUTES: Record<string, ClientScope> = {
	"GET /v1/sessions/:id": "read",
	"HEAD /v1/sessions/:id": "read",
	"GET /v1/sessions/:id/messages": "read",
	"HEAD /v1/sessions/:id/messages": "read",
	"GET /v1/sessions/:id/events": "read",
	"HEAD /v1/sessions/:id/events": "read",
	"POST /v1/sessions/:id/prompt": "write",
	"POST /v1/sessions/:id/continue": "write",
	"POST /v1/sessions/:id/steer": "write",
	"POST /v1/sessions/:id/follow-up": "write",
	"POST /v1/sessions/:id/abort": "write",
	"DELETE /v1/sessions/:id/queue": "write",
	"POST /v1/sessions/:id/tool-results/:toolCallId": "write",
	"POST /v1/sessions/:id/approvals/:toolCallId": "approve",
	"POST /v1/sessions/:id/elicitations/:elicitationId": "approve",
};

/** The scope a route needs from a client token; undefined: no client token opens it. */
export function scopeOfRoute(method: string, routeUrl: string | undefined): ClientScope | undefined {
	return routeUrl === undefined ? undefined : ROUTES[`${method} ${routeUrl}`];
}
