/**
 * `wheelhouse chat`: talk to an agent in the terminal. The answer streams above the input line;
 * a line typed while a run is active steers it (Alt+Enter or `/followup <text>` queues a follow-up
 * instead);
 * Ctrl-C aborts the run, twice exits; approvals and client tools ask in the terminal.
 */
import * as readline from "node:readline";
import type { QueuedAccepted, ReceivedEvent, Session, SessionSummary, WheelhouseClient } from "../client/index.js";
import { titleFrom } from "../client/session-title.js";
import { describeFailure, EXIT } from "./options.js";
import { brief, outcomeOf, type Style, sessionLine, textOf } from "./render.js";

export interface ChatFlags {
	/** Resume this session. */
	session?: string;
	/** Create a new session (no picker). */
	new?: boolean;
	/** Model of a new session, or the model `--session` switches to. */
	model?: string;
}

export interface ChatIo {
	input: NodeJS.ReadableStream;
	output: NodeJS.WritableStream & { columns?: number; isTTY?: boolean };
}

const HELP = `Type a message and press Enter. While the agent answers, a line you type steers it;
Alt+Enter queues the line as a follow-up instead (delivered when the agent would stop).
  /followup <text>   queue a follow-up
  /sessions          the sessions on the server, newest first
  /resume <id|n>     switch to a session, by id or its number in /sessions
  /new               start a new session
  /model [<id>]      the models, or switch this session's model
  /usage             tokens and cost: this session and your key this month
  /abort             abort the run (Ctrl-C does too; Ctrl-C twice exits)
  /help, /quit       (//text sends "/text" as a message)`;

/** A question the next line answers instead of being a message. */
type Pending =
	| { kind: "approval"; toolCallId: string; toolName: string }
	| { kind: "client-tool"; toolCallId: string; toolName: string };

/** Runs the chat until `/quit`, Ctrl-C twice or the end of input; resolves with the exit code. */
export async function chatCommand(client: WheelhouseClient, flags: ChatFlags, io: ChatIo, s: Style): Promise<number> {
	const out = io.output;
	const tty = out.isTTY === true;
	const rl = readline.createInterface({ input: io.input, output: out, prompt: s.bold("> "), terminal: tty });

	/** The incomplete last line of output, redrawn above the input line. */
	let partial = "";
	let sessionId = "";
	let session: Session | undefined;
	let run: { abort: AbortController; done: Promise<void> } | undefined;
	const pending: Pending[] = [];
	let lastSigint = 0;
	/** The ids the last `/sessions` showed, in its order (`/resume 2` is the second). */
	let listed: string[] = [];
	/** Lines typed (or piped) before the session is chosen wait for it. */
	let setupDone!: (ok: boolean) => void;
	const ready = new Promise<boolean>((resolve) => {
		setupDone = resolve;
	});
	let closed = false;
	/** The input ended (Ctrl-D, or the end of piped input): what was typed is still carried out. */
	let inputEnded = false;

	/** Writes `text` above the input line, which is redrawn below it. */
	/** Whole lines (a status said mid-answer) that piped output writes once the answer's line is complete. */
	const held: string[] = [];
	/** Writes `text` after the output so far, and the lines of `above` before its incomplete last line. */
	const print = (text: string, above = "") => {
		if (!tty) {
			out.write(text);
			partial = (partial + text).slice((partial + text).lastIndexOf("\n") + 1);
			if (above) held.push(above);
			if (!partial && held.length) out.write(held.splice(0).join(""));
			return;
		}
		readline.cursorTo(out, 0);
		readline.clearLine(out, 0);
		if (partial) {
			const columns = out.columns || 80;
			readline.moveCursor(out, 0, -Math.max(1, Math.ceil(visibleLength(partial) / columns)));
			readline.clearScreenDown(out);
		}
		const all = partial + text;
		out.write(above + all);
		partial = all.slice(all.lastIndexOf("\n") + 1);
		if (partial) out.write("\n");
		if (inputEnded) return;
		rl.setPrompt(promptText());
		rl.prompt(true);
	};
	/**
	 * Writes one line. While an answer's line is being streamed the line goes above it (a terminal)
	 * or after it (piped output), so that a status said mid-answer never splits the answer's words.
	 */
	const line = (text: string) => (partial ? print("", `${text}\n`) : print(`${text}\n`));
	const promptText = () => {
		const question = pending[0];
		if (question?.kind === "approval") return s.yellow(`approve ${question.toolName}? [y/n] `);
		if (question?.kind === "client-tool") return s.yellow(`${question.toolName} result> `);
		return s.bold(run ? "steer> " : "> ");
	};
	const refreshPrompt = () => {
		if (inputEnded) return;
		rl.setPrompt(promptText());
		rl.prompt(true);
	};
	const failure = (error: unknown) => line(s.red(describeFailure(error, client.baseUrl)));

	const queued = (accepted: QueuedAccepted) =>
		line(
			s.dim(
				`queued as ${accepted.queue === "steer" ? "steer" : "follow-up"} (${accepted.queueLength} waiting${accepted.idle ? ", delivered with the next run" : ""})`,
			),
		);

	const useSession = async (id: string, showHistory: boolean) => {
		session = await client.getSession(id);
		sessionId = session.id;
		line(s.dim(`session ${sessionId} · ${session.model} · ${session.messageCount} messages · /help for commands`));
		await explainStandIn();
		if (showHistory && session.messageCount > 0) {
			const page = await client.messages(sessionId, { offset: Math.max(0, session.messageCount - 6), limit: 6 });
			for (const message of page.messages) {
				const text = textOf(message);
				if (text) line(`${message.role === "user" ? s.bold("you: ") : ""}${brief(text, 400)}`);
			}
		}
		if (session.status === "running") watchRun(client.events(sessionId, { until: (e) => e.type === "agent_end" }));
	};

	const newSession = async () => {
		const created = await client.createSession(flags.model ? { model: flags.model } : {});
		await useSession(created.id, false);
	};

	/** Models already explained: the hint is said once per model, not at every session switch. */
	const explained = new Set<string>();
	/** Says what a stand-in model does, so that an echo is not taken for a broken agent. */
	const explainStandIn = async () => {
		const model = session?.model;
		if (!model || explained.has(model)) return;
		explained.add(model);
		const { models } = await client.models();
		if (!models.some((m) => m.id === model && m.standIn)) return;
		line(
			s.dim(
				`${model} is a stand-in that repeats your message (no LLM, no key needed); //tool calculate {"expression": "6*7"} makes it call a tool. Start the server with OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY for a real model.`,
			),
		);
	};

	/** A session without a title is named after its first prompt, as the playground names it. */
	const titleAfter = (prompt: string) => {
		const current = session;
		const title = titleFrom(prompt);
		if (!current || current.metadata?.title || !title) return;
		current.metadata = { ...current.metadata, title };
		client.updateSession(current.id, { metadata: current.metadata }).catch(failure);
	};

	const handleEvent = async (event: ReceivedEvent) => {
		const data = event.data as any;
		switch (event.type) {
			case "message_update": {
				const inner = data.assistantMessageEvent;
				if (inner?.type === "text_delta") print(inner.delta);
				else if (inner?.type === "thinking_delta") print(s.dim(inner.delta));
				break;
			}
			case "message_end":
				if (data.message?.role === "assistant" && partial) print("\n");
				break;
			case "message_start":
				// The run's first user message is the prompt typed here; a later one was steered or queued in.
				if (data.message?.role !== "user") break;
				if (!seenRunPrompt) seenRunPrompt = true;
				else line(s.cyan(`» ${brief(textOf(data.message), 200)}`));
				break;
			case "tool_execution_start":
				line(s.dim(`⚙ ${data.toolName}(${brief(data.args)})`));
				break;
			case "tool_result_requested":
				// Sent once the call waits (after its approval, when it asks for one): a result typed now is taken.
				pending.push({ kind: "client-tool", toolCallId: data.toolCallId, toolName: data.toolName });
				line(s.yellow(`${data.toolName} is yours to run: type its result`));
				refreshPrompt();
				break;
			case "tool_execution_end": {
				// A client tool's wait ends with its call (answered elsewhere, timed out, aborted).
				const index = pending.findIndex((p) => p.kind === "client-tool" && p.toolCallId === data.toolCallId);
				if (index >= 0) {
					pending.splice(index, 1);
					refreshPrompt();
				}
				line(
					data.isError
						? s.red(`✗ ${data.toolName}: ${brief(textOf(data.result) || data.result)}`)
						: s.green(`✓ ${data.toolName}: ${brief(textOf(data.result) || data.result)}`),
				);
				break;
			}
			case "approval_requested":
				pending.push({ kind: "approval", toolCallId: data.toolCallId, toolName: data.toolName });
				line(s.yellow(`? ${data.toolName}(${brief(data.args, 300)}) asks for approval`));
				refreshPrompt();
				break;
			case "approval_resolved": {
				const index = pending.findIndex((p) => p.toolCallId === data.toolCallId);
				if (index >= 0) pending.splice(index, 1);
				if (data.outcome?.kind !== "approved" && data.outcome?.kind !== "denied") {
					line(s.dim(`${data.toolName}: ${data.outcome?.kind}`));
				}
				refreshPrompt();
				break;
			}
			case "run_interrupted":
				line(s.red(`the server stopped during the run${data.willContinue ? "; it continues" : ""}`));
				break;
			case "agent_end": {
				const { outcome, error } = outcomeOf(event);
				if (outcome !== "completed") line(s.red(`[${outcome}${error ? `: ${error}` : ""}]`));
				break;
			}
		}
	};

	let seenRunPrompt = false;
	const watchRun = (events: AsyncGenerator<ReceivedEvent>, abort = new AbortController(), fromPrompt = false) => {
		seenRunPrompt = !fromPrompt;
		const done = (async () => {
			try {
				for await (const event of events) await handleEvent(event);
			} catch (error) {
				if (!abort.signal.aborted) failure(error);
			} finally {
				pending.length = 0;
				run = undefined;
				if (partial) print("\n");
				if (!closed) refreshPrompt();
			}
		})();
		run = { abort, done };
		refreshPrompt();
	};

	const startRun = (text: string) => {
		const abort = new AbortController();
		watchRun(client.streamPrompt(sessionId, text, { signal: abort.signal }), abort, true);
	};

	const abortRun = async () => {
		line(s.yellow("aborting… (Ctrl-C again to exit)"));
		try {
			await client.abort(sessionId);
		} catch (error) {
			failure(error);
		}
	};

	const command = async (text: string): Promise<boolean> => {
		const [name, ...rest] = text.slice(1).split(/\s+/);
		const arg = rest.join(" ").trim();
		switch (name) {
			case "help":
			case "?":
				line(HELP);
				return true;
			case "quit":
			case "exit":
			case "q":
				return false;
			case "followup":
			case "follow-up":
			case "f":
				if (!arg) line(s.red("/followup <text>"));
				else queued(await client.followUp(sessionId, arg));
				return true;
			case "abort":
				if (run) await abortRun();
				else line(s.dim("no run to abort"));
				return true;
			case "sessions": {
				const all: SessionSummary[] = [];
				for await (const summary of client.allSessions()) all.push(summary);
				all.sort((a, b) => b.lastActiveAt - a.lastActiveAt);
				listed = all.slice(0, 20).map((summary) => summary.id);
				for (const [i, summary] of all.slice(0, 20).entries())
					line(`${String(i + 1).padStart(2)}) ${sessionLine(summary, s, sessionId)}`);
				if (all.length > 20) line(s.dim(`… and ${all.length - 20} more`));
				return true;
			}
			case "resume": {
				// A number is the session of that number in the last /sessions list.
				const id = /^\d+$/.test(arg) ? listed[Number(arg) - 1] : arg;
				if (!arg) line(s.red("/resume <session id, or its number in /sessions>"));
				else if (!id) line(s.red(`no session ${arg} in the last /sessions list`));
				else if (run) line(s.red("a run is active: wait for it or /abort first"));
				else await useSession(id, true);
				return true;
			}
			case "new":
				if (run) line(s.red("a run is active: wait for it or /abort first"));
				else await newSession();
				return true;
			case "model":
				if (!arg) {
					const { models } = await client.models();
					for (const model of models.filter((m) => m.available)) {
						line(
							`${model.id === session?.model ? s.green("*") : " "} ${model.id}${model.standIn ? s.dim(" (stand-in)") : ""}`,
						);
					}
				} else {
					session = await client.updateSession(sessionId, { model: arg });
					line(s.dim(`model: ${session.model}`));
				}
				return true;
			case "usage": {
				session = await client.getSession(sessionId);
				const u = session.usage;
				line(`this session: ${u.totalTokens} tokens, $${u.cost.total.toFixed(4)}`);
				const report = await client.usage();
				line(
					`your key ${report.from}…${report.to}: ${report.total.totalTokens} tokens, $${report.total.costUsd.toFixed(4)}, ${report.total.turns} turns`,
				);
				return true;
			}
			default:
				line(s.red(`unknown command /${name}: /help lists them (//text sends "/text" as a message)`));
				return true;
		}
	};

	const onLine = async (input: string): Promise<boolean> => {
		const text = input.trim();
		const question = pending[0];
		if (question) {
			if (question.kind === "approval") {
				const answer = text.toLowerCase();
				if (answer !== "y" && answer !== "n" && answer !== "yes" && answer !== "no") {
					line(s.red("answer y or n"));
					return true;
				}
				pending.shift();
				const approve = answer.startsWith("y");
				await client.approve(sessionId, question.toolCallId, {
					approve,
					...(approve ? {} : { reason: "denied in the terminal" }),
				});
				line(s.dim(`${question.toolName}: ${approve ? "approved" : "denied"}`));
			} else {
				pending.shift();
				await client.toolResult(sessionId, question.toolCallId, { content: input });
			}
			refreshPrompt();
			return true;
		}
		if (!text) {
			refreshPrompt();
			return true;
		}
		// `//text` sends `/text` as a message (the stand-in model's `/tool NAME {…}`, say).
		if (text.startsWith("/") && !text.startsWith("//")) return command(text);
		const message = text.startsWith("//") ? text.slice(1) : text;
		if (run) {
			queued(await client.steer(sessionId, message));
			return true;
		}
		line(`${s.bold("you: ")}${message}`);
		startRun(message);
		titleAfter(message);
		return true;
	};

	const finished = new Promise<number>((resolve) => {
		const quit = () => {
			if (closed) return;
			closed = true;
			run?.abort.abort();
			rl.close();
			resolve(EXIT.ok);
		};
		// Ctrl-C reaches readline as a key while it reads the terminal; a SIGINT signal (kill -INT, or a
		// Ctrl-C typed while the terminal is handed back on the way out) quits the same way.
		process.on("SIGINT", quit);
		rl.on("SIGINT", () => {
			const now = Date.now();
			if (now - lastSigint < 2000) return quit();
			lastSigint = now;
			rl.line && rl.write(null, { ctrl: true, name: "u" });
			if (run) void abortRun();
			else line(s.dim("(Ctrl-C again to exit)"));
		});
		// Lines are handled one at a time, in order, even when one waits for the server.
		let chain = ready;
		const handle = (work: () => Promise<boolean>) => {
			chain = chain.then(async (goOn) => {
				if (!goOn || closed) return false;
				try {
					const more = await work();
					if (!more) quit();
					return more;
				} catch (error) {
					failure(error);
					return true;
				}
			});
		};
		// Alt+Enter queues the typed line as a follow-up instead of steering (readline ignores the key).
		io.input.on("keypress", (_text: string, key: { name?: string; meta?: boolean } | undefined) => {
			if (closed || key?.name !== "return" || !key.meta || pending.length > 0) return;
			const text = rl.line.trim();
			if (!text) return;
			rl.write(null, { ctrl: true, name: "e" });
			rl.write(null, { ctrl: true, name: "u" });
			handle(async () => {
				queued(await client.followUp(sessionId, text));
				return true;
			});
		});
		rl.on("close", () => {
			inputEnded = true;
			// Piped input ends before the answers: the lines already read and their runs finish first.
			void chain.then(() => run?.done).then(quit);
		});
		rl.on("line", (input) => {
			// Readline has moved below the line just entered: take it off the screen, so that output
			// keeps going above the input line (what was typed is shown as `you:` or acted upon).
			if (tty) {
				const rows = Math.max(1, Math.ceil((visibleLength(rl.getPrompt()) + input.length) / (out.columns || 80)));
				readline.moveCursor(out, 0, -rows);
				readline.clearScreenDown(out);
			}
			handle(() => onLine(input));
		});
	});

	try {
		if (flags.session) {
			if (flags.model) await client.updateSession(flags.session, { model: flags.model });
			await useSession(flags.session, true);
		} else if (flags.new) await newSession();
		else await pickSession();
	} catch (error) {
		failure(error);
		setupDone(false);
		rl.close();
		return EXIT.request;
	}
	setupDone(true);
	refreshPrompt();
	return finished;

	async function pickSession(): Promise<void> {
		const recent = (await client.listSessions({ limit: 1000 })).sessions
			.sort((a, b) => b.lastActiveAt - a.lastActiveAt)
			.slice(0, 9);
		if (recent.length === 0) return newSession();
		line("Recent sessions:");
		for (const [i, summary] of recent.entries()) line(`  ${i + 1}) ${sessionLine(summary, s).trim()}`);
		const answer = await new Promise<string>((resolve) =>
			rl.question("Resume which (1-9), or Enter for a new session: ", resolve),
		);
		const index = Number(answer.trim()) - 1;
		if (answer.trim() && recent[index]) await useSession(recent[index]!.id, true);
		else await newSession();
	}
}

/** Characters on screen: without colour codes. */
function visibleLength(text: string): number {
	// biome-ignore lint/suspicious/noControlCharactersInRegex: strips the ANSI colour codes we write
	return text.replace(/\u001b\[[0-9;]*m/g, "").length;
}
