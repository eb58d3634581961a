/**
 * A client generated from the OpenAPI document: `openapi-typescript` turns the document a running
 * server serves at /openapi.json into TypeScript types, a small fetch client written against
 * those types (`paths[...]`, the named `components`) type-checks with the TypeScript compiler, a
 * client with mistakes does not, and the typed client, compiled, talks to the server.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString, type OpenAPI3 } from "openapi-typescript";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../../src/server/http/app.js";

/** A typed client over fetch, as a user would write one against the generated `schema.ts`. */
const CLIENT = `
import type { components, paths } from "./schema.js";

export type Session = components["schemas"]["Session"];
export type ErrorCode = components["schemas"]["ErrorCode"];
type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;
type CreateSessionBody = NonNullable<paths["/v1/sessions"]["post"]["requestBody"]>["content"]["application/json"];
type PatchSessionBody = NonNullable<paths["/v1/sessions/{id}"]["patch"]["requestBody"]>["content"]["application/json"];
type PromptBody = NonNullable<paths["/v1/sessions/{id}/prompt"]["post"]["requestBody"]>["content"]["application/json"];
type Failure = Json<paths["/v1/sessions/{id}"]["get"]["responses"]["4XX"]>;

export type Result<T> = { ok: true; status: number; data: T } | { ok: false; status: number; error: Failure["error"] };

export function createClient(baseUrl: string) {
	async function call<T>(method: string, url: string, body?: unknown): Promise<Result<T>> {
		const res = await fetch(baseUrl + url, {
			method,
			headers: body === undefined ? {} : { "content-type": "application/json" },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const json = await res.json();
		return res.ok ? { ok: true, status: res.status, data: json as T } : { ok: false, status: res.status, error: (json as Failure).error };
	}
	return {
		createSession: (body: CreateSessionBody) =>
			call<Json<paths["/v1/sessions"]["post"]["responses"]["201"]>>("POST", "/v1/sessions", body),
		getSession: (id: string) =>
			call<Json<paths["/v1/sessions/{id}"]["get"]["responses"]["200"]>>("GET", "/v1/sessions/" + encodeURIComponent(id)),
		patchSession: (id: string, body: PatchSessionBody) =>
			call<Json<paths["/v1/sessions/{id}"]["patch"]["responses"]["200"]>>("PATCH", "/v1/sessions/" + encodeURIComponent(id), body),
		prompt: (id: string, body: PromptBody) =>
			call<Json<paths["/v1/sessions/{id}/prompt"]["post"]["responses"]["202"]>>("POST", "/v1/sessions/" + encodeURIComponent(id) + "/prompt", body),
		listModels: () => call<Json<paths["/v1/models"]["get"]["responses"]["200"]>>("GET", "/v1/models"),
	};
}

/** What a caller does with the answers: narrowing on the documented literals and codes. */
export function describeSession(session: Session): string {
	const compaction = session.compaction ? \` (compacts above \${session.compaction.thresholdTokens} tokens)\` : "";
	const budget = session.keyBudget === undefined || session.keyBudget === null ? "" : \` key budget \${session.keyBudget.period}\`;
	return \`\${session.id} \${session.status} on \${session.model}, thinking \${session.thinkingLevel}\${compaction}\${budget}\`;
}

export function retryable(code: ErrorCode): boolean {
	switch (code) {
		case "AGENT_BUSY":
		case "SHUTTING_DOWN":
		case "STORE_UNAVAILABLE":
			return true;
		default:
			return false;
	}
}

export function runIdOf(accepted: Json<paths["/v1/sessions/{id}/prompt"]["post"]["responses"]["202"]>): string | undefined {
	return accepted.status === "started" ? accepted.runId : undefined;
}
`;

/**
 * Clients with one mistake each, and a piece of the diagnostic the compiler must report for it:
 * each must fail to type-check, or the types check nothing.
 */
const MISTAKES: Record<string, { source: string; expect: string }> = {
	"wrong-enum-value.ts": {
		source: `import type { paths } from "./schema.js";
type Body = NonNullable<paths["/v1/sessions"]["post"]["requestBody"]>["content"]["application/json"];
export const body: Body = { model: "faux/echo", thinkingLevel: "extreme" };`,
		expect: '"extreme"',
	},
	"wrong-field.ts": {
		source: `import type { components } from "./schema.js";
export const read = (summary: components["schemas"]["SessionSummary"]) => summary.notAField;`,
		expect: "notAField",
	},
	"wrong-error-code.ts": {
		source: `import type { components } from "./schema.js";
export const code: components["schemas"]["ErrorCode"] = "NOT_A_CODE";`,
		expect: '"NOT_A_CODE"',
	},
	"wrong-path.ts": {
		source: `import type { paths } from "./schema.js";
export type Op = paths["/v1/session"]["get"];`,
		expect: "'/v1/session'",
	},
	"wrong-body-type.ts": {
		source: `import type { paths } from "./schema.js";
type Body = NonNullable<paths["/v1/sessions/{id}/prompt"]["post"]["requestBody"]>["content"]["application/json"];
export const body: Body = { message: 42 };`,
		expect: "number",
	},
	"missing-required.ts": {
		source: `import type { components } from "./schema.js";
export const accepted: components["schemas"]["RunAccepted"] = { status: "started", runId: "r1" };`,
		expect: "firstEventId",
	},
};

const COMPILER_OPTIONS: ts.CompilerOptions = {
	strict: true,
	noEmit: true,
	target: ts.ScriptTarget.ES2022,
	module: ts.ModuleKind.NodeNext,
	moduleResolution: ts.ModuleResolutionKind.NodeNext,
	lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
	types: [],
	skipLibCheck: false,
};

/** The compiler's diagnostics for `files` of `dir`, by file name. */
function typeCheck(dir: string, files: string[]): Map<string, string[]> {
	const program = ts.createProgram(
		files.map((file) => path.join(dir, file)),
		COMPILER_OPTIONS,
	);
	const byFile = new Map<string, string[]>();
	for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
		const file = diagnostic.file ? path.basename(diagnostic.file.fileName) : "(global)";
		const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
		byFile.set(file, [...(byFile.get(file) ?? []), `TS${diagnostic.code}: ${text}`]);
	}
	return byFile;
}

describe("a client generated from the OpenAPI document (openapi-typescript)", () => {
	let app: Awaited<ReturnType<typeof buildApp>>;
	let baseUrl: string;
	let dir: string;
	let schemaSource: string;

	beforeAll(async () => {
		app = await buildApp({ env: {}, config: { logLevel: "silent" } });
		await app.listen({ port: 0, host: "127.0.0.1" });
		const { port } = app.server.address() as { port: number };
		baseUrl = `http://127.0.0.1:${port}`;
		dir = mkdtempSync(path.join(tmpdir(), "wheelhouse-openapi-client-"));
		// The document as a client generator gets it: from the running server.
		const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as OpenAPI3;
		schemaSource = astToString(await openapiTS(document, { silent: true }));
		writeFileSync(path.join(dir, "schema.ts"), schemaSource);
		writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
	}, 60_000);

	afterAll(async () => {
		await app?.close();
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	it("generates types that name the shared shapes once", () => {
		for (const name of ["Session", "ErrorEnvelope", "ErrorCode", "AgentMessage", "CreateSessionBody", "RunAccepted"]) {
			expect(schemaSource, name).toMatch(new RegExp(`\\n {8}${name}: `));
		}
		// The error envelope's code enum is written once, not once per operation and status.
		expect(schemaSource.split('"SESSION_NOT_FOUND"').length - 1).toBe(1);
	});

	it("type-checks a typed fetch client against them with no diagnostics", () => {
		writeFileSync(path.join(dir, "client.ts"), CLIENT);
		const diagnostics = typeCheck(dir, ["client.ts"]);
		expect(Object.fromEntries(diagnostics)).toEqual({});
	}, 60_000);

	it("reports each mistake of a client that does not match the document", () => {
		for (const [file, { source }] of Object.entries(MISTAKES)) writeFileSync(path.join(dir, file), source);
		const diagnostics = typeCheck(dir, Object.keys(MISTAKES));
		for (const [file, { expect: fragment }] of Object.entries(MISTAKES)) {
			const messages = diagnostics.get(file) ?? [];
			expect(messages.length, `${file} type-checked, but it has a mistake`).toBeGreaterThan(0);
			expect(messages.join("\n"), file).toContain(fragment);
		}
		// Nothing else failed: the schema file itself compiles.
		expect([...diagnostics.keys()].filter((file) => !(file in MISTAKES))).toEqual([]);
	}, 60_000);

	it("talks to the server it was generated from", async () => {
		const js = ts.transpileModule(CLIENT, {
			compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 },
		}).outputText;
		writeFileSync(path.join(dir, "client.mjs"), js);
		const client = await import(pathToFileURL(path.join(dir, "client.mjs")).href);
		const api = client.createClient(baseUrl);

		const models = await api.listModels();
		expect(models.ok).toBe(true);
		expect(models.data.models.map((m: { id: string }) => m.id)).toContain("faux/echo");

		const created = await api.createSession({ model: "faux/echo", thinkingLevel: "low", metadata: { app: "typed" } });
		expect(created).toMatchObject({ ok: true, status: 201, data: { model: "faux/echo", thinkingLevel: "low" } });
		const id = created.data.id;

		const patched = await api.patchSession(id, { thinkingLevel: "high" });
		expect(patched).toMatchObject({ ok: true, status: 200, data: { id, thinkingLevel: "high" } });
		const fetched = await api.getSession(id);
		expect(client.describeSession(fetched.data)).toMatch(new RegExp(`^${id} idle on faux/echo, thinking high`));

		const refused = await api.createSession({ thinkingLevel: "extreme" });
		expect(refused).toMatchObject({ ok: false, status: 400, error: { code: "VALIDATION_FAILED" } });
		expect(client.retryable(refused.error.code)).toBe(false);

		const missing = await api.getSession("no-such-session");
		expect(missing).toMatchObject({ ok: false, status: 404, error: { code: "SESSION_NOT_FOUND" } });
	});
});
