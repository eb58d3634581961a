/**
 * The container's entry, without a Docker engine: emits dist/ from src/ as the image's build stage
 * does (see buildDist), lays out a folder like the runtime stage's /app
 * (package.json, openapi.yaml, dist/, node_modules), and runs the Dockerfile's own CMD with the
 * Dockerfile's own ENV (PORT on a free port, WHEELHOUSE_DB in a temp folder instead of /data),
 * then its HEALTHCHECK command, /readyz, and SIGTERM → exit 0.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import {
	copyFileSync,
	existsSync,
	mkdirSync,
	mkdtempSync,
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
	healthcheck: string[];
	env: Record<string, string>;
	copies: string[];
	lines: string[];
}

/** Reads what the runtime stage runs: CMD, HEALTHCHECK CMD, ENV (with ARG defaults substituted), COPY sources from the context. */
function readDockerfile(): Dockerfile {
	const text = readFileSync(path.join(repoRoot, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
	const lines = text.split("\n").map((l) => l.trim());
	const args: Record<string, string> = {};
	const env: Record<string, string> = {};
	const copies: string[] = [];
	let cmd: string[] = [];
	let healthcheck: string[] = [];
	const expand = (value: string) => value.replace(/\$\{(\w+)\}/g, (_, name) => env[name] ?? args[name] ?? "");
	for (const line of lines) {
		if (line.startsWith("FROM ")) {
			// ENV belongs to a stage: keep only the last (runtime) stage's.
			for (const key of Object.keys(env)) delete env[key];
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
	return { cmd, healthcheck, env, copies, lines };
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

beforeAll(async () => {
	// The runtime stage's /app: package.json, openapi.yaml, dist/ and the dependencies.
	appDir = mkdtempSync(path.join(tmpdir(), "wheelhouse-image-"));
	copyFileSync(path.join(repoRoot, "package.json"), path.join(appDir, "package.json"));
	if (existsSync(path.join(repoRoot, "openapi.yaml"))) {
		copyFileSync(path.join(repoRoot, "openapi.yaml"), path.join(appDir, "openapi.yaml"));
	}
	symlinkSync(path.join(repoRoot, "node_modules"), path.join(appDir, "node_modules"), "dir");
	await buildDist(path.join(appDir, "dist"));
	// The second half of the build stage's `npm run build`: the playground page.
	const { buildPlayground } = await import("../../scripts/build-playground.js");
	await buildPlayground(path.join(appDir, "dist/playground"));
}, 180_000);

afterAll(() => {
	if (appDir) rmSync(appDir, { recursive: true, force: true });
});

describe("Dockerfile", () => {
	it("runs node dist/main.js as a non-root user with a /data volume, a healthcheck and SIGTERM", () => {
		expect(dockerfile.cmd).toEqual(["node", "dist/main.js"]);
		expect(dockerfile.lines).toContain("USER node");
		expect(dockerfile.lines.some((l) => /^VOLUME \[?"?\/data/.test(l))).toBe(true);
		expect(dockerfile.lines).toContain("STOPSIGNAL SIGTERM");
		expect(dockerfile.env.WHEELHOUSE_DB).toBe("/data/wheelhouse.db");
		expect(dockerfile.env.PORT).toMatch(/^\d+$/);
		expect(dockerfile.lines.some((l) => l.includes("npm ci --omit=dev"))).toBe(true);
		expect(dockerfile.healthcheck[0]).toBe("node");
	});

	it("resolves every package.json export to a built module with the API the README names", async () => {
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
			expect.arrayContaining([
				"package.json",
				"package-lock.json",
				"src",
				"openapi.yaml",
				"scripts/build-playground.ts",
			]),
		);
	});

	it("starts with the image's CMD and env, is healthy and ready, and exits 0 on SIGTERM", async () => {
		const port = await freePort();
		const dataDir = path.join(appDir, "data");
		mkdirSync(dataDir, { recursive: true });
		const env = {
			PATH: process.env.PATH,
			...dockerfile.env,
			PORT: String(port),
			WHEELHOUSE_DB: path.join(dataDir, "wheelhouse.db"),
		};
		const [command, ...args] = dockerfile.cmd;
		const child = spawn(command === "node" ? process.execPath : command, args, { cwd: appDir, env });
		const exited = once(child, "exit");
		try {
			await waitForOutput(child, /listening/i);
			const health = await fetch(`http://127.0.0.1:${port}/healthz`);
			expect(health.status).toBe(200);
			const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
			expect(ready.status).toBe(200);

			// The HEALTHCHECK command itself, as Docker would run it inside the container.
			const [hcCommand, ...hcArgs] = dockerfile.healthcheck;
			const healthcheck = spawn(hcCommand === "node" ? process.execPath : hcCommand, hcArgs, { env });
			const [hcCode] = await once(healthcheck, "exit");
			expect(hcCode).toBe(0);

			// The playground page is in the image and served.
			const page = await fetch(`http://127.0.0.1:${port}/`);
			expect(page.status).toBe(200);
			expect(await page.text()).toContain('src="/playground/app.js"');
			expect((await fetch(`http://127.0.0.1:${port}/playground/app.js`)).status).toBe(200);

			// The SQLite store is where the image's env puts it.
			expect(existsSync(env.WHEELHOUSE_DB)).toBe(true);
		} finally {
			child.kill("SIGTERM");
		}
		const [code, signal] = await exited;
		expect({ code, signal }).toEqual({ code: 0, signal: null });
	}, 60_000);

	it("fails the healthcheck when nothing listens", async () => {
		const port = await freePort();
		const [hcCommand, ...hcArgs] = dockerfile.healthcheck;
		const healthcheck = spawn(hcCommand === "node" ? process.execPath : hcCommand, hcArgs, {
			env: { PATH: process.env.PATH, PORT: String(port) },
		});
		const [code] = await once(healthcheck, "exit");
		expect(code).toBe(1);
	});
});
