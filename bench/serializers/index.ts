/**
 * What writing a JSON response costs with the app's response serializers (lazy-serializers.ts,
 * compiling the schemas as serialization-schema.ts rewrites them) against Fastify's own
 * fast-json-stringify serializer, for two responses every client gets: the session view of
 * `POST /v1/sessions` (201) and the error envelope of a 404.
 *
 * The documents are the real answers of an in-process app. For each response: compiling the
 * serializer and its first call (what a route pays once, on its first answer with that status),
 * the median of fresh compiles; then the CPU time of 100,000 serializations, the median of
 * interleaved rounds. Both serializers must write the same bytes, or the bench fails.
 *
 *   npx tsx bench/serializers/index.ts [--quick]
 */
import { loadavg } from "node:os";
import SerializerSelector from "@fastify/fast-json-stringify-compiler";
import { buildApp } from "../../src/server/http/app.js";
import { lazySerializerFactory } from "../../src/server/http/lazy-serializers.js";
import { responses, SessionView } from "../../src/server/http/schemas.js";

const quick = process.argv.includes("--quick");
const COMPILES = quick ? 5 : 15;
const ROUNDS = quick ? 3 : 11;
const N = 100_000;

type Serialize = (doc: unknown) => string;
type Compiler = (route: { method: string; url: string; httpStatus: string; schema: unknown }) => Serialize;

const SERIALIZERS: Record<string, () => Compiler> = {
	"Fastify's": () => SerializerSelector()({}, {}),
	"the app's": () => lazySerializerFactory({}, {}),
};

function median(values: number[]): number {
	return [...values].sort((a, b) => a - b)[values.length >> 1];
}

/** CPU milliseconds of `N` serializations of `doc`. */
function cpuMs(serialize: Serialize, doc: unknown): number {
	const start = process.cpuUsage();
	let bytes = 0;
	for (let i = 0; i < N; i++) bytes += serialize(doc).length;
	const spent = process.cpuUsage(start);
	if (bytes === 0) throw new Error("nothing written");
	return (spent.user + spent.system) / 1000;
}

async function realDocuments(): Promise<{ session: unknown; notFound: unknown }> {
	const app = await buildApp({ env: {}, config: { logLevel: "silent" } });
	try {
		const created = await app.inject({ method: "POST", url: "/v1/sessions", payload: { metadata: { team: "a" } } });
		const missing = await app.inject({ method: "GET", url: "/v1/sessions/no-such-session" });
		if (created.statusCode !== 201 || missing.statusCode !== 404) throw new Error("unexpected answers");
		return { session: created.json(), notFound: missing.json() };
	} finally {
		await app.close();
	}
}

const documents = await realDocuments();
const schemas = responses({ 201: SessionView }) as Record<string, unknown>;
const cases = [
	{
		name: "session view (201)",
		route: { method: "POST", url: "/v1/sessions", httpStatus: "201", schema: schemas[201] },
		doc: documents.session,
	},
	{
		name: "error envelope (404)",
		route: { method: "GET", url: "/v1/sessions/:id", httpStatus: "4xx", schema: schemas["4xx"] },
		doc: documents.notFound,
	},
];

console.log(
	`Node ${process.version}, load average ${loadavg()
		.map((x) => x.toFixed(2))
		.join(" ")}`,
);
for (const { name, route, doc } of cases) {
	const compileMs: Record<string, number[]> = {};
	const serializers: Record<string, Serialize> = {};
	for (let i = 0; i < COMPILES; i++) {
		for (const [label, factory] of Object.entries(SERIALIZERS)) {
			const start = performance.now();
			const serialize = factory()(route);
			serialize(doc);
			compileMs[label] ??= [];
			compileMs[label].push(performance.now() - start);
			serializers[label] = serialize;
		}
	}
	const written = Object.values(serializers).map((serialize) => serialize(doc));
	if (written.some((json) => json !== written[0])) throw new Error(`${name}: the serializers write different JSON`);
	const cpu: Record<string, number[]> = {};
	for (const serialize of Object.values(serializers)) cpuMs(serialize, doc); // warm-up
	for (let round = 0; round < ROUNDS; round++) {
		for (const [label, serialize] of Object.entries(serializers)) {
			cpu[label] ??= [];
			cpu[label].push(cpuMs(serialize, doc));
		}
	}
	console.log(`\n${name}, ${written[0].length} bytes`);
	for (const label of Object.keys(SERIALIZERS)) {
		console.log(
			`  ${label.padEnd(10)} compile + first call ${median(compileMs[label]).toFixed(1).padStart(6)} ms` +
				`   ${N.toLocaleString("en")} serializations ${median(cpu[label]).toFixed(0).padStart(5)} ms CPU` +
				` (${((median(cpu[label]) * 1000) / N).toFixed(2)} µs each)`,
		);
	}
	const [ours, theirs] = ["the app's", "Fastify's"].map((label) => ({
		compile: median(compileMs[label]),
		cpu: median(cpu[label]),
	}));
	console.log(
		`  ratio (Fastify's / the app's): compile ${(theirs.compile / ours.compile).toFixed(2)}x, serialize ${(theirs.cpu / ours.cpu).toFixed(2)}x`,
	);
}
console.log(
	`\nload average after: ${loadavg()
		.map((x) => x.toFixed(2))
		.join(" ")}`,
);
