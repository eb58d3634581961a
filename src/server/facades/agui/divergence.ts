/**
 * An edited AG-UI history: where a `RunAgentInput`'s conversation leaves the thread's stored
 * transcript, and what the session does about it. A client that lets the user edit an earlier
 * message (CopilotKit's edit, a "regenerate" that drops the last answer) sends the conversation up
 * to the edit followed by the new user message; the session is rewound there (the port's `edit`
 * or `rewind`), so what followed stays readable as a superseded branch (docs/branching.md) and the
 * thread goes on from the edit, instead of the new message being appended after the old answers.
 *
 * The conversation is compared as the client sees the transcript (`transcriptMessages`: user,
 * assistant and tool messages; reasoning, system and developer messages are not compared), each
 * message by its role and what a model reads of it: text and images, tool calls (id, name,
 * arguments), a tool result's call id and text. Message ids are not compared (a client may give an
 * edited message a new id or keep the old one). A stored tool result the client does not have
 * (the server's, for a call the client abandoned or a restart cut short) is not a difference.
 *
 * A client that keeps no answers (its conversation has no assistant message) is not taken to edit
 * anything: its messages the session holds are left out as before (run-start.ts).
 *
 * Only user messages may follow the point where the conversation leaves the transcript: messages
 * the model did not write in this thread cannot be put in its place (`VALIDATION_FAILED`, naming
 * the message).
 */
import type { AgentMessage } from "../../../agent/types.js";
import type { UserMessage } from "../../../ai/types.js";
import { apiError } from "../../http/errors.js";
import type { LiveSession } from "../../runtime/session/live-session.js";
import type { AguiMessage } from "./events.js";
import type { InputMessage, Tail } from "./input.js";
import { indexOfId, transcriptMessages } from "./transcript.js";

type Json = Record<string, any>;

/** Roles compared (the others have no place in the transcript, or are not sent back). */
const COMPARED = new Set(["user", "assistant", "tool"]);

/** Where the conversation leaves the transcript, and the user messages that follow. */
export interface Divergence {
	/** The transcript index of the first stored message the conversation does not have. */
	index: number;
	/** Its role in the transcript (`user`: an edit; otherwise the answers from there are dropped). */
	role: string;
	/** The client's user messages after the divergence, with their ids, in order. */
	prompt: { id: string; message: UserMessage }[];
}

function textAndImages(content: unknown): string[] {
	if (typeof content === "string") return content === "" ? [] : [`t:${content}`];
	if (!Array.isArray(content)) return [];
	const parts: string[] = [];
	let text = "";
	for (const part of content as Json[]) {
		if (part?.type === "text") text += String(part.text ?? "");
		else if (part?.type === "image") {
			if (text !== "") parts.push(`t:${text}`);
			text = "";
			const source = (part.source ?? {}) as Json;
			const url = /^data:[^;,]+;base64,(.*)$/s.exec(String(source.value ?? ""));
			parts.push(`i:${url ? url[1] : String(source.value ?? "")}`);
		}
	}
	if (text !== "") parts.push(`t:${text}`);
	return parts;
}

function callsOf(toolCalls: unknown): string[] {
	if (!Array.isArray(toolCalls)) return [];
	return (toolCalls as Json[]).map((call) => {
		let args: unknown = {};
		try {
			args = JSON.parse(String(call?.function?.arguments ?? "") || "{}");
		} catch {
			args = call?.function?.arguments;
		}
		return `c:${call?.id}:${call?.function?.name}:${JSON.stringify(args)}`;
	});
}

/** What a model reads of an AG-UI message, as one comparable string. */
function essence(message: InputMessage | AguiMessage): string {
	const m = message as Json;
	return JSON.stringify([
		m.role,
		m.role === "tool" ? String(m.toolCallId ?? "") : null,
		textAndImages(m.content),
		m.role === "assistant" ? callsOf(m.toolCalls) : [],
	]);
}

/**
 * Whether the conversation can be taken to extend the transcript without reading it: its last
 * message from the model is the transcript's last message (an id of ours), as in every request
 * that follows an answer. An edit drops that message.
 */
function extendsLastAnswer(messages: readonly InputMessage[], tail: Tail, messageCount: number): boolean {
	const last = messages[tail.start - 1];
	return last !== undefined && indexOfId(last.id) === messageCount - 1;
}

/**
 * Where `messages` leave the session's transcript, or undefined when they do not (they are the
 * transcript, possibly followed by new messages, or share nothing with it, or come from a client
 * that keeps no answers).
 */
export async function divergenceOf(
	session: LiveSession,
	messages: readonly InputMessage[],
	tail: Tail,
): Promise<Divergence | undefined> {
	if (session.messageCount === 0 || extendsLastAnswer(messages, tail, session.messageCount)) return undefined;
	const stored = transcriptMessages((await session.wholeTranscript()) as AgentMessage[]).filter((m) =>
		COMPARED.has(m.role),
	);
	const sent = messages.map((message, at) => ({ message, at })).filter(({ message }) => COMPARED.has(message.role));
	// A client that keeps no answers sends its own messages only: they are not an edit.
	if (!sent.some(({ message }) => message.role === "assistant")) return undefined;
	// `i` walks the transcript, `j` the conversation. A tool result the client never had (the
	// server's for a call it abandoned, or one a restart or an abort cut short) is passed over.
	let i = 0;
	let j = 0;
	while (i < stored.length) {
		const ours = stored[i] as AguiMessage;
		const theirs = sent[j]?.message;
		if (theirs && essence(ours) === essence(theirs)) {
			i++;
			j++;
		} else if (ours.role === "tool" && !(theirs?.role === "tool" && theirs.toolCallId === ours.toolCallId)) i++;
		else break;
	}
	// Nothing shared (a client that keeps no history) or nothing left out: no edit.
	if (j === 0 || i === stored.length) return undefined;
	const k = i;
	const after = sent.slice(j);
	const other = after.find(({ message }) => message.role !== "user");
	// A message the client names as ours but renders otherwise: its ids are trusted, not the text.
	if (other && indexOfId(other.message.id) !== undefined) return undefined;
	if (other) {
		throw apiError(
			"VALIDATION_FAILED",
			`body.messages[${other.at}]: the conversation leaves the thread's transcript at its message ${stored[k]!.id} and goes on with a message (role "${other.message.role}") the thread does not have; only user messages may follow an edited message.`,
		);
	}
	const byId = new Map(tail.prompt.map((entry) => [entry.id, entry]));
	const prompt = after.map(({ message }) => byId.get(message.id)).filter((e) => e !== undefined);
	const first = stored[k] as AguiMessage;
	// The conversation stops before a user message: nothing to say in its place.
	if (first.role === "user" && prompt.length === 0) return undefined;
	return { index: indexOfId(first.id) as number, role: first.role, prompt };
}
