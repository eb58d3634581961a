/**
 * `wheelhouse run "<prompt>"`: one prompt for scripts. The answer's text goes to stdout (or every
 * event as a JSON line with `--json`), and the exit code says how the run ended.
 */
import type { WheelhouseClient } from "../client/index.js";
import { titleFrom } from "../client/session-title.js";
import { EXIT, UsageError } from "./options.js";
import { outcomeOf, type RunOutcome } from "./render.js";

export interface RunFlags {
	session?: string;
	model?: string;
	json?: boolean;
	/** Approve every tool call that asks for approval (default: deny, so a script never hangs). */
	approve?: boolean;
}

export interface Io {
	stdout: NodeJS.WritableStream;
	stderr: NodeJS.WritableStream;
}

const CODES: Record<RunOutcome, number> = {
	completed: EXIT.ok,
	failed: EXIT.failed,
	aborted: EXIT.aborted,
	interrupted: EXIT.interrupted,
};

/** Runs the prompt to its end; resolves with the exit code. SIGINT aborts the run. */
export async function runCommand(client: WheelhouseClient, prompt: string, flags: RunFlags, io: Io): Promise<number> {
	if (!prompt.trim()) throw new UsageError('run: give the prompt, e.g. wheelhouse run "Hello"');
	const title = titleFrom(prompt);
	const sessionId =
		flags.session ??
		(
			await client.createSession({
				...(flags.model ? { model: flags.model } : {}),
				...(title ? { metadata: { title } } : {}),
			})
		).id;
	if (flags.session && flags.model) await client.updateSession(sessionId, { model: flags.model });
	if (!flags.json) io.stderr.write(`session ${sessionId}\n`);
	const onSigint = () => {
		void client.abort(sessionId).catch(() => {});
	};
	process.on("SIGINT", onSigint);
	let code: number = EXIT.interrupted;
	let endsWithNewline = true;
	try {
		for await (const event of client.streamPrompt(sessionId, prompt)) {
			const data = event.data as any;
			if (flags.json) io.stdout.write(`${JSON.stringify({ id: event.id, type: event.type, data })}\n`);
			else if (event.type === "message_update" && data.assistantMessageEvent?.type === "text_delta") {
				const delta: string = data.assistantMessageEvent.delta;
				io.stdout.write(delta);
				if (delta) endsWithNewline = delta.endsWith("\n");
			}
			if (event.type === "approval_requested") {
				const approve = flags.approve === true;
				io.stderr.write(`${approve ? "approving" : "denying"} ${data.toolName} (--approve to run tools that ask)\n`);
				await client.approve(sessionId, data.toolCallId, {
					approve,
					...(approve ? {} : { reason: "denied by `wheelhouse run` (no --approve)" }),
				});
			}
			if (event.type === "agent_end" || (event.type === "run_interrupted" && !data.willContinue)) {
				const { outcome, error } = outcomeOf(event);
				code = CODES[outcome];
				if (!flags.json) {
					if (!endsWithNewline) io.stdout.write("\n");
					if (outcome !== "completed") io.stderr.write(`run ${outcome}${error ? `: ${error}` : ""}\n`);
				}
			}
		}
	} finally {
		process.off("SIGINT", onSigint);
	}
	return code;
}
