/**
 * What the MCP facade asks the client's user by elicitation, and what the answer resolves: an
 * approval (accept approves; decline and cancel deny) or a client tool's result (accept gives the
 * `result` field as the tool's result; decline and cancel give an error result). The request's id
 * names the kind, the session and the call, so the answer resolves the wait from whichever
 * replica it reaches, with no state kept between requests.
 */
import type { Resolution } from "../../runtime/session/port.js";
import type { PendingCall } from "./session-access.js";

type Json = Record<string, any>;

/** Ends the MCP session ids of clients that declared the elicitation capability. */
export const ELICITS_SUFFIX = ".e";

/** Id prefixes of our elicitation requests, by what the answer resolves. */
const APPROVAL_PREFIX = "wh-elicit:";
const RESULT_PREFIX = "wh-elicit-result:";
const ID = /^(wh-elicit(?:-result)?):([^:]+):(.+)$/;

/** A JSON-RPC response to one of our elicitation requests. */
export function isElicitationAnswer(message: Json): boolean {
	return (
		typeof message.id === "string" &&
		(message.id.startsWith(APPROVAL_PREFIX) || message.id.startsWith(RESULT_PREFIX)) &&
		message.method === undefined &&
		(message.result !== undefined || message.error !== undefined)
	);
}

const argsOf = (pending: PendingCall) => JSON.stringify(pending.args ?? {}).slice(0, 2000);

/** The `elicitation/create` request that asks the user what `pending` waits for. */
export function elicitationRequest(pending: PendingCall, sessionId: string) {
	const approval = pending.kind === "approval";
	return {
		jsonrpc: "2.0" as const,
		id: `${approval ? APPROVAL_PREFIX : RESULT_PREFIX}${sessionId}:${pending.toolCallId}`,
		method: "elicitation/create",
		params: {
			mode: "form",
			...(approval
				? {
						message: `The agent wants to call ${pending.toolName} with ${argsOf(pending)}. Approve?`,
						requestedSchema: {
							type: "object",
							properties: {
								reason: { type: "string", title: "Reason", description: "Shown to the agent when you decline." },
							},
						},
					}
				: {
						message: `The agent calls ${pending.toolName} with ${argsOf(pending)}, a tool whose result you give. What is its result?`,
						requestedSchema: {
							type: "object",
							properties: {
								result: {
									type: "string",
									title: "Result",
									description: `The result of ${pending.toolName}, as the agent will see it.`,
								},
							},
							required: ["result"],
						},
					}),
		},
	};
}

/** Why the user gave no answer: the denial's reason or the error result the model sees. */
function whyNot(answer: Json, what: string): string {
	if (answer.error) return "The MCP client could not ask its user.";
	return `The user ${answer.result?.action === "cancel" ? "dismissed" : "declined"} ${what}.`;
}

/** The session and the resolution an elicitation's answer gives; undefined for an id that is not ours. */
export function resolutionOf(answer: Json): { sessionId: string; resolution: Resolution } | undefined {
	const [, prefix, sessionId, toolCallId] = ID.exec(answer.id as string) ?? [];
	if (!prefix || !sessionId || !toolCallId) return undefined;
	const accepted = answer.error === undefined && answer.result?.action === "accept";
	const content = answer.result?.content as Json | undefined;
	if (`${prefix}:` === APPROVAL_PREFIX) {
		const reason = content?.reason;
		return {
			sessionId,
			resolution: {
				kind: "approval",
				toolCallId,
				value: accepted
					? { approve: true }
					: {
							approve: false,
							reason: typeof reason === "string" && reason !== "" ? reason : whyNot(answer, "the request"),
						},
			},
		};
	}
	const result = content?.result;
	return {
		sessionId,
		resolution: {
			kind: "client_tool",
			toolCallId,
			value:
				accepted && typeof result === "string"
					? { content: result }
					: {
							content: accepted
								? "The MCP client answered without a result."
								: whyNot(answer, "to give this tool's result over MCP"),
							isError: true,
						},
		},
	};
}
