/**
 * Drives a command in a real pseudo-terminal with tmux: a private server per terminal (`-L`), keys
 * typed with send-keys, the screen read with capture-pane. `killAll()` (in `afterEach`) ends every
 * tmux server a test started.
 */
import { execFileSync } from "node:child_process";

const TMUX = "/usr/bin/tmux";
const sockets = new Set<string>();
let counter = 0;

export interface Terminal {
	/** Types `text` literally (no Enter). */
	type(text: string): void;
	/** Sends tmux key names: `Enter`, `C-c`… */
	keys(...names: string[]): void;
	/** The screen and its scrollback, one string, lines joined (wrapped lines unwrapped). */
	screen(): string;
	/** Resolves with the screen once `pattern` matches it; fails after `timeoutMs` showing the screen. */
	waitFor(pattern: RegExp | ((screen: string) => boolean), timeoutMs?: number): Promise<string>;
	/** `undefined` while the command runs, else its exit status (as the shell reports it: 128 + a signal's number). */
	exitStatus(): number | undefined;
	kill(): void;
}

/** Starts `command` (a shell command line) in a new 160×50 terminal, in `cwd`, with `env` added. */
export function openTerminal(command: string, options: { cwd: string; env?: Record<string, string> }): Terminal {
	const socket = `wh-test-${process.pid}-${++counter}`;
	sockets.add(socket);
	const tmux = (...args: string[]) => execFileSync(TMUX, ["-L", socket, ...args], { encoding: "utf8" });
	const envArgs = Object.entries(options.env ?? {}).flatMap(([key, value]) => ["-e", `${key}=${value}`]);
	tmux(
		"-f",
		"/dev/null",
		"new-session",
		"-d",
		"-x",
		"160",
		"-y",
		"50",
		"-s",
		"main",
		"-c",
		options.cwd,
		...envArgs,
		// The shell prints the exit status: tmux may mark a pane dead on the pty's end before it has
		// reaped the process, and then never shows its status.
		`${command}; printf '\\n[exited %d]\\n' $?`,
		";",
		"set-option",
		"-t",
		"main",
		"remain-on-exit",
		"on",
		";",
		"set-option",
		"-t",
		"main",
		"history-limit",
		"5000",
	);
	const terminal: Terminal = {
		type: (text) => void tmux("send-keys", "-t", "main", "-l", text),
		keys: (...names) => void tmux("send-keys", "-t", "main", ...names),
		screen: () => tmux("capture-pane", "-p", "-J", "-t", "main", "-S", "-5000"),
		async waitFor(pattern, timeoutMs = 15_000) {
			const matches = typeof pattern === "function" ? pattern : (screen: string) => pattern.test(screen);
			const deadline = Date.now() + timeoutMs;
			for (;;) {
				const screen = terminal.screen();
				if (matches(screen)) return screen;
				if (Date.now() > deadline) throw new Error(`terminal never showed ${pattern}; the screen:\n${screen}`);
				await new Promise((resolve) => setTimeout(resolve, 100));
			}
		},
		exitStatus() {
			const match = /\[exited (\d+)\]/.exec(terminal.screen());
			return match ? Number(match[1]) : undefined;
		},
		kill() {
			try {
				tmux("kill-server");
			} catch {}
			sockets.delete(socket);
		},
	};
	return terminal;
}

export function killAll(): void {
	for (const socket of [...sockets]) {
		try {
			execFileSync(TMUX, ["-L", socket, "kill-server"]);
		} catch {}
		sockets.delete(socket);
	}
}
