// Launches a real Chromium (headless) once for the file: seconds on a busy machine.
/**
 * The API reference at `/docs` (Swagger UI over the server's OpenAPI document): open without a key
 * while the API behind it is not, a strict CSP on every response, nothing served from outside
 * Swagger UI's own files, left out of the OpenAPI document, off with `WHEELHOUSE_DOCS=off`; and in
 * Chromium, the operations render with no console error (CSP violations show there), a call made
 * from the page without a key is refused, and after Authorize with a key `GET /v1/models` answers
 * 200 in the page. Without Chromium the browser test skips with one line (TEST_REQUIRE_ALL=1
 * makes that a failure); the HTTP checks always run.
 */
import { request as httpRequest } from "node:http";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, haveChromium, launchChromium } from "../../helpers/chromium.js";
import { startServer, type TestServer } from "../../helpers/server.js";

const HAVE_CHROMIUM = haveChromium();
const KEY = "key-docs-page-0123456789";

let chromiumHandle: Awaited<ReturnType<typeof launchChromium>> | undefined;
let browser: BrowserContext | undefined;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
	if (!HAVE_CHROMIUM) return;
	chromiumHandle = await launchChromium();
	browser = chromiumHandle.browser;
}, 60_000);

afterAll(async () => {
	await chromiumHandle?.close();
});

afterEach(async () => {
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
	const server = await startServer(options);
	cleanups.push(() => server.close());
	return server;
}

/** GET with the request target sent exactly as given (fetch would resolve dot segments first). */
function rawGet(
	server: TestServer,
	target: string,
): Promise<{ status: number; body: string; location: string | undefined }> {
	const { hostname, port } = new URL(server.url);
	return new Promise((resolve, reject) => {
		const req = httpRequest({ host: hostname, port, path: target, method: "GET" }, (res) => {
			let body = "";
			res.setEncoding("utf8");
			res.on("data", (chunk: string) => {
				body += chunk;
			});
			res.on("end", () => resolve({ status: res.statusCode ?? 0, body, location: res.headers.location }));
		});
		req.on("error", reject);
		req.end();
	});
}

describe("/docs over HTTP", () => {
	it("serves the page and its assets without a key, each with a strict CSP and nothing inline", async () => {
		const server = await serve({ config: { apiKeys: [KEY] } });
		for (const url of ["/docs", "/docs/"]) {
			const res = await server.request("GET", url);
			expect(res.status).toBe(200);
			expect(res.headers.get("content-type")).toMatch(/^text\/html/);
			const html = res.body as string;
			expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
			expect(html).not.toMatch(/\sstyle=|<style/);
			expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
		}
		for (const url of [
			"/docs",
			"/docs/static/swagger-ui-bundle.js",
			"/docs/static/swagger-ui-standalone-preset.js",
			"/docs/static/swagger-initializer.js",
			"/docs/static/swagger-ui.css",
			"/docs/json",
		]) {
			const res = await server.request("GET", url);
			expect(res.status, url).toBe(200);
			const csp = res.headers.get("content-security-policy") ?? "";
			for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'"]) {
				expect(csp, url).toContain(directive);
			}
			expect(csp, url).toContain("object-src 'none'");
			expect(csp, url).toContain("frame-ancestors 'none'");
			expect(csp, url).not.toMatch(/unsafe-|https:|\*/);
			expect(res.headers.get("x-content-type-options"), url).toBe("nosniff");
		}
		// The page's copy of the document is the server's document.
		const spec = (await server.request("GET", "/openapi.json")).body;
		expect((await server.request("GET", "/docs/json")).body).toEqual(spec);
		// The old index path redirects to the page itself, whatever the request's spelling.
		const redirect = await fetch(`${server.url}/docs/static/index.html`, { redirect: "manual" });
		expect(redirect.status).toBe(302);
		expect(redirect.headers.get("location")).toBe("/docs/");
		const absolute = await rawGet(server, "http://evil.example/docs/static/index.html");
		expect([absolute.status, absolute.location]).toEqual([302, "/docs/"]);
		// The page is open; the API behind it is not.
		expect((await server.request("GET", "/v1/models")).status).toBe(401);
		expect((await server.request("GET", "/docs-nope")).status).toBe(401);
	});

	it("serves nothing outside Swagger UI's own files", async () => {
		const server = await serve({ config: { apiKeys: [KEY] } });
		for (const target of [
			"/docs/static/../../package.json",
			"/docs/static/%2e%2e/%2e%2e/package.json",
			"/docs/static/..%2f..%2f..%2fpackage.json",
			"/docs/static/..%2f..%2findex.js",
			"/docs/static/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fpackage.json",
			"/docs/static//etc/passwd",
			"/docs/static/%2fetc%2fpasswd",
			"/docs/static/..%5c..%5cpackage.json",
		]) {
			const res = await rawGet(server, target);
			expect(res.status, target).not.toBe(200);
			expect(res.body, target).not.toMatch(/"version"|root:|module\.exports/);
		}
	});

	it("answers 404 for a file Swagger UI does not have", async () => {
		const server = await serve({ config: { apiKeys: [KEY] } });
		const res = await server.request("GET", "/docs/static/nope.js");
		expect(res.status).toBe(404);
		expect(res.body.error.code).toBe("NOT_FOUND");
	});

	it("is left out of the OpenAPI document", async () => {
		const server = await serve();
		const spec = (await server.request("GET", "/openapi.json")).body;
		expect(Object.keys(spec.paths).filter((p) => p.startsWith("/docs"))).toEqual([]);
	});

	it("serves nothing at /docs with WHEELHOUSE_DOCS=off", async () => {
		const server = await serve({ env: { WHEELHOUSE_DOCS: "off" } });
		expect((await server.request("GET", "/docs")).status).toBe(404);
		expect((await server.request("GET", "/docs/static/swagger-ui-bundle.js")).status).toBe(404);
		expect((await server.request("GET", "/openapi.json")).status).toBe(200);
	});
});

/** A new tab; its console errors, uncaught exceptions and CSP violations are collected. */
async function openPage(url: string): Promise<{ page: Page; errors: string[] }> {
	const page = await browser!.newPage();
	cleanups.push(() => page.close());
	const errors: string[] = [];
	page.on("console", (message) => {
		if (message.type() === "error") errors.push(message.text());
	});
	page.on("pageerror", (error) => errors.push(String(error)));
	await page.addInitScript(() => {
		const doc = (globalThis as any).document;
		doc.addEventListener("securitypolicyviolation", (event: any) =>
			console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`),
		);
	});
	await page.goto(url);
	return { page, errors };
}

/** Expands an operation, turns on "Try it out" and executes it; returns the status the page shows. */
async function execute(page: Page, operation: string): Promise<string> {
	const block = page.locator(operation);
	if (!(await block.locator(".opblock-body").isVisible())) await block.locator(".opblock-summary-control").click();
	const tryIt = block.getByRole("button", { name: "Try it out" });
	if (await tryIt.isVisible()) await tryIt.click();
	await block.getByRole("button", { name: "Execute" }).click();
	const status = block.locator(".live-responses-table .response .response-col_status");
	await status.first().waitFor();
	const text = (await status.first().textContent()) ?? "";
	await block.getByRole("button", { name: "Clear" }).click();
	await status.first().waitFor({ state: "detached" });
	return text.trim();
}

describe.skipIf(!HAVE_CHROMIUM)(
	HAVE_CHROMIUM ? "/docs in Chromium" : `/docs in Chromium: skipped, no Chromium at ${CHROMIUM}`,
	() => {
		it("renders the operations, and calls the API from the page with the key given to Authorize", async () => {
			const server = await serve({ config: { apiKeys: [KEY] } });
			const { page, errors } = await openPage(`${server.url}/docs`);

			const createSession = page.locator("#operations-sessions-postSessions");
			await createSession.waitFor();
			expect((await createSession.locator(".opblock-summary-method").textContent())?.trim()).toBe("POST");
			expect(await createSession.locator(".opblock-summary-path").getAttribute("data-path")).toBe("/v1/sessions");
			expect(await page.locator(".opblock").count()).toBeGreaterThan(20);

			// Without a key the API refuses the page's call.
			expect(await execute(page, "#operations-catalog-getModels")).toMatch(/^401\b/);

			await page.locator(".auth-wrapper .authorize").click();
			const dialog = page.locator(".dialog-ux");
			// The API key's scheme (the JWT one is beside it).
			const keyScheme = dialog.locator(".auth-container", { hasText: "bearerAuth" });
			await keyScheme.getByLabel("auth-bearer-value").fill(KEY);
			await keyScheme.getByRole("button", { name: "Apply credentials" }).click();
			await dialog.getByRole("button", { name: "Close", exact: true }).first().click();

			expect(await execute(page, "#operations-catalog-getModels")).toMatch(/^200\b/);
			expect(errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
		}, 60_000);
	},
);
