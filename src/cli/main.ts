#!/usr/bin/env node
/**
 * The `wheelhouse` command: `chat`, `run "<prompt>"` and `tail <session>` against a Wheelhouse
 * server (URL and key from `--url`/`--api-key` or `WHEELHOUSE_URL`/`WHEELHOUSE_API_KEY`).
 * Arguments are parsed with `node:util` parseArgs; see docs/cli.md.
 */
import { parseArgs } from "node:util";
import type { WheelhouseClient } from "../client/index.js";
import { chatCommand } from "./chat.js";
import { CONNECTION_OPTIONS, connect, DEFAULT_URL, describeFailure, EXIT, UsageError } from "./options.js";
import { style } from "./render.js";
import { runCommand } from "./run.js";
import { tailCommand } from "./tail.js";

const USAGE = `Usage: wheelhouse <command> [options]

Commands:
  chat                 talk to an agent (pick or create a session)
      --session <id>   resume this session      --new           a new session
      --model <id>     model of a new session (or of --session)
  run "<prompt>"       one prompt for scripts; exit 0 completed, 1 failed, 2 aborted,
                       3 interrupted, 4 refused/unreachable, 64 bad usage
      --session <id>   run in this session (default: a new one)
      --model <id>     the model    --json   every event as a JSON line    --approve  approve tool calls
  tail <session>       a session's events, one line each, reconnecting after disconnects
      --after <id>     replay after this event id    --once   stop after the run's end    --json

Options:
  -u, --url <url>      the server (default: $WHEELHOUSE_URL, else ${DEFAULT_URL})
  -k, --api-key <key>  the API key (default: $WHEELHOUSE_API_KEY)
  -h, --help`;

const OPTIONS = {
	...CONNECTION_OPTIONS,
	session: { type: "string", short: "s" },
	new: { type: "boolean" },
	model: { type: "string", short: "m" },
	json: { type: "boolean" },
	approve: { type: "boolean" },
	after: { type: "string" },
	once: { type: "boolean" },
} as const;

/** Runs the command line `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
	const io = { stdout: process.stdout, stderr: process.stderr };
	const colour = (stream: NodeJS.WriteStream) => stream.isTTY === true && !env.NO_COLOR;
	let client: WheelhouseClient | undefined;
	try {
		const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
		const [command, ...rest] = positionals;
		if (values.help || !command || command === "help") {
			io.stdout.write(`${USAGE}\n`);
			return command || values.help ? EXIT.ok : EXIT.usage;
		}
		client = connect(values, env);
		switch (command) {
			case "chat":
				if (rest.length) throw new UsageError(`chat takes no arguments (got ${rest.join(" ")})`);
				return await chatCommand(
					client,
					values,
					{ input: process.stdin, output: process.stdout },
					style(colour(process.stdout)),
				);
			case "run":
				return await runCommand(client, rest.join(" "), values, io);
			case "tail":
				if (rest.length > 1) throw new UsageError("tail takes one session id");
				return await tailCommand(client, rest[0], values, io, style(colour(process.stdout)));
			default:
				throw new UsageError(`unknown command: ${command} (chat, run, tail)`);
		}
	} catch (error) {
		if (error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
			io.stderr.write(`wheelhouse: ${(error as Error).message}\n\n${USAGE}\n`);
			return EXIT.usage;
		}
		io.stderr.write(`wheelhouse: ${describeFailure(error, client?.baseUrl ?? DEFAULT_URL)}\n`);
		return EXIT.request;
	}
}

// A reader that stops early (`| head`) is no failure of the command.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
	if (error.code === "EPIPE") process.exit(EXIT.ok);
	throw error;
});
const code = await main(process.argv.slice(2));
process.exitCode = code;
// The chat's input and a streaming fetch may keep the loop alive; the command is done.
setImmediate(() => process.exit(code));
