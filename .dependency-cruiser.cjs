/**
 * Which folder of src/ may import which: the layers point one way (server → store, tools, wire →
 * agent → ai; client and the playground beside them), and no file takes part in an import cycle.
 * `npm run depcruise` checks it; `npm test` runs that before the tests. Type-only imports count:
 * a type import is still a dependency on the module's contract.
 */

/** A rule: files under `from` may import nothing of ours outside `allowed` (and their own folder). */
function layer(name, from, allowed) {
	return {
		name,
		severity: "error",
		comment: `${from} may import only from ${[from, ...allowed].join(", ")} (src/*)`,
		from: { path: `^src/${from}/` },
		to: { path: "^src/", pathNot: `^src/(${[from, ...allowed].join("|")})/` },
	};
}

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
	forbidden: [
		layer("ai-imports-nothing-of-ours", "ai", []),
		layer("agent-above-ai", "agent", ["ai"]),
		layer("store-above-agent", "store", ["agent", "ai"]),
		layer("tools-above-agent", "tools", ["agent", "ai"]),
		layer("wire-above-agent", "wire", ["agent", "ai"]),
		layer("server-on-top", "server", ["store", "tools", "wire", "agent", "ai"]),
		layer("client-beside", "client", ["wire", "ai"]),
		layer("playground-beside", "playground", ["client", "wire", "ai"]),
		layer("cli-on-client", "cli", ["client"]),
		{
			name: "client-without-server-packages",
			severity: "error",
			comment: "src/client and src/cli run without the server's packages (the client is bundled for browsers)",
			from: { path: "^src/(client|cli)/" },
			to: { path: "node_modules/(fastify|@fastify/|better-sqlite3|pg|ioredis|pino)" },
		},
		// Inside src/server the folders are layers too: the session runtime (runtime/) knows nothing of
		// HTTP or of the protocols the facades speak; configuration reads nothing else of the server;
		// the facades are adapters that only the app (http/app.ts) wires in. No import breaks them, and
		// any violation fails.
		{
			name: "runtime-below-http",
			severity: "error",
			comment: "src/server/runtime (sessions, runs, compaction, budgets, schedules) imports nothing of http/ or facades/",
			from: { path: "^src/server/runtime/" },
			to: { path: "^src/server/(http|facades)/" },
		},
		{
			name: "config-reads-nothing-else",
			severity: "error",
			comment: "src/server/config imports only config/ of the server (every layer reads it; it reads none)",
			from: { path: "^src/server/config/" },
			to: { path: "^src/server/", pathNot: "^src/server/config/" },
		},
		{
			name: "observability-below-http",
			severity: "error",
			comment: "src/server/observability (metrics, tracing, webhooks) imports nothing of facades/ or cluster/",
			from: { path: "^src/server/observability/" },
			to: { path: "^src/server/(facades|cluster)/" },
		},
		{
			name: "facades-wired-by-the-app-only",
			severity: "error",
			comment: "nothing but src/server/http/app.ts imports a facade (a facade is an adapter over the session port)",
			from: { path: "^src/server/", pathNot: "^src/server/(facades/|http/app\\.ts$)" },
			to: { path: "^src/server/facades/" },
		},
		{
			name: "entry-points-are-roots",
			severity: "error",
			comment: "src/main.ts and src/index.ts sit above every folder; nothing in a folder imports them",
			from: { path: "^src/[^/]+/" },
			to: { path: "^src/(main|index)\\.ts$" },
		},
		{
			name: "no-circular",
			severity: "error",
			comment: "no file takes part in an import cycle (type-only imports included)",
			from: { path: "^src/" },
			to: { circular: true },
		},
	],
	options: {
		doNotFollow: { path: "node_modules" },
		exclude: { path: "(^|/)node_modules/" },
		tsPreCompilationDeps: true,
		tsConfig: { fileName: "tsconfig.json" },
		enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "types", "node", "default"] },
	},
};
