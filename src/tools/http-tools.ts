/**
 * HTTP tools from config: each entry becomes an `AgentTool` that calls one configured URL.
 *
 * The model never chooses the host. The URL template's origin (scheme, host, port) must be
 * literal; `{arg}` placeholders are allowed only in the path and query, are filled URL-encoded,
 * and the final URL's origin is checked against the template's before any request. Redirects
 * are not followed (a 3xx is an error result), so a response cannot send the call elsewhere.
 *
 * Arguments not used by the template go in the query string (GET, DELETE) or the JSON body
 * (POST, PUT, PATCH).
 */
import type { TSchema } from "@sinclair/typebox";
import type { AgentTool, AgentToolResult } from "../agent/types.js";
import { undici } from "../ai/http.js";
import type { ImageContent, TextContent } from "../ai/types.js";
import type { HttpToolConfig } from "./config.js";
import { substituteEnv, substituteEnvRecord } from "./env.js";
import type { IdempotentMark } from "./idempotent.js";

/** Where an HTTP tool comes from (for `GET /v1/tools`). */
export interface HttpToolOrigin {
	kind: "http";
	method: string;
	/** The URL template as configured (secrets only ever appear in headers, which are not shown). */
	url: string;
}

export interface HttpToolDetails {
	status: number;
	contentType?: string;
	/** Parsed body when the response is JSON. */
	json?: unknown;
	bytes: number;
}

export type HttpAgentTool = AgentTool<TSchema, HttpToolDetails> & { origin: HttpToolOrigin } & IdempotentMark;

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const EXCERPT_CHARS = 500;
const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);

interface UrlTemplate {
	template: string;
	origin: string;
	/** Placeholder names, in order of appearance. */
	names: string[];
	/** Names used before the query (path placeholders, where `.` and `..` are refused). */
	pathNames: Set<string>;
}

function parseTemplate(template: string, where: string): UrlTemplate {
	// The authority ends at the first "/", "?" or "#" after "scheme://"; it must hold no placeholder.
	const match = /^(https?):\/\/([^/?#]*)/i.exec(template);
	if (!match) throw new Error(`${where}: must be an absolute http(s) URL, got ${template}`);
	if (match[2]!.includes("{")) {
		throw new Error(`${where}: placeholders are not allowed in the host; the host is fixed by config`);
	}
	const origin = new URL(match[0]).origin;
	const names: string[] = [];
	const pathNames = new Set<string>();
	const queryStart = template.indexOf("?");
	for (const m of template.matchAll(PLACEHOLDER)) {
		names.push(m[1]!);
		if (queryStart < 0 || m.index! < queryStart) pathNames.add(m[1]!);
	}
	// The template with placeholders filled must still be a URL of that origin.
	const probe = new URL(template.replace(PLACEHOLDER, "x"));
	if (probe.origin !== origin) throw new Error(`${where}: could not parse ${template}`);
	return { template, origin, names, pathNames };
}

function stringify(value: unknown): string {
	if (value === undefined || value === null) return "";
	return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** Fills the template and returns the URL plus the arguments the template did not use. Throws on a host change. */
export function fillUrl(
	template: UrlTemplate,
	args: Record<string, unknown>,
	method: string,
): { url: URL; rest: Record<string, unknown> } {
	const filled = template.template.replace(PLACEHOLDER, (_m, name: string) => {
		const value = stringify(args[name]);
		if (template.pathNames.has(name) && (value === "." || value === "..")) {
			throw new Error(`Argument "${name}" may not be "${value}" (it would change the path)`);
		}
		return encodeURIComponent(value);
	});
	const url = new URL(filled);
	if (url.origin !== template.origin) {
		throw new Error(`Refusing to call ${url.origin}: this tool may only call ${template.origin}`);
	}
	const rest: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(args)) {
		if (!template.names.includes(key) && value !== undefined) rest[key] = value;
	}
	if (!BODY_METHODS.has(method)) {
		for (const [key, value] of Object.entries(rest)) url.searchParams.append(key, stringify(value));
	}
	return { url, rest };
}

/** Reads at most `max` bytes; aborts the request and throws past that. */
async function readCapped(body: AsyncIterable<Buffer>, max: number, abort: () => void): Promise<Buffer> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of body) {
		size += chunk.length;
		if (size > max) {
			abort();
			throw new Error(`Response larger than the limit of ${max} bytes; the request was cut off`);
		}
		chunks.push(chunk);
	}
	return Buffer.concat(chunks, size);
}

function defaultParameters(names: string[]): Record<string, unknown> {
	const properties: Record<string, unknown> = {};
	for (const name of names) properties[name] = { type: "string" };
	return { type: "object", properties, required: [...new Set(names)] };
}

/**
 * Builds one HTTP tool. Throws at load (naming `where`) for a bad URL template, a placeholder in
 * the host, or an unset `${ENV}` in a header or the URL.
 */
export function createHttpTool(
	config: HttpToolConfig,
	options: { env?: NodeJS.ProcessEnv; where?: string } = {},
): HttpAgentTool {
	const where = options.where ?? `tools.httpTools.${config.name}`;
	const env = options.env ?? process.env;
	const method = (config.method ?? "GET").toUpperCase();
	const template = parseTemplate(substituteEnv(config.url, `${where}.url`, env), `${where}.url`);
	const headers = substituteEnvRecord(config.headers, `${where}.headers`, env);
	const timeoutMs = config.timeoutMs ?? 10_000;
	const maxBytes = config.maxResponseBytes ?? 1_048_576;

	return {
		name: config.name,
		label: config.name,
		description: config.description,
		parameters: (config.parameters ?? defaultParameters(template.names)) as unknown as TSchema,
		origin: { kind: "http", method, url: config.url },
		idempotent: config.idempotent === true,
		async execute(_toolCallId, params, signal): Promise<AgentToolResult<HttpToolDetails>> {
			const { url, rest } = fillUrl(template, (params ?? {}) as Record<string, unknown>, method);
			// Before the timer: loading undici (the process's first request does) is not the server's slowness.
			const { request } = undici();
			const controller = new AbortController();
			let timedOut = false;
			const timer = setTimeout(() => {
				timedOut = true;
				controller.abort(new Error(`timed out after ${timeoutMs} ms`));
			}, timeoutMs);
			const onAbort = () => controller.abort(signal?.reason);
			if (signal?.aborted) onAbort();
			signal?.addEventListener("abort", onAbort, { once: true });
			try {
				const hasBody = BODY_METHODS.has(method);
				const response = await request(url, {
					method: method as "GET",
					headers: {
						accept: "application/json, text/*;q=0.9, */*;q=0.1",
						...(hasBody ? { "content-type": "application/json" } : {}),
						...headers,
					},
					...(hasBody ? { body: JSON.stringify(rest) } : {}),
					signal: controller.signal,
				});
				const declared = Number(response.headers["content-length"]);
				if (Number.isFinite(declared) && declared > maxBytes) {
					controller.abort();
					response.body.destroy();
					throw new Error(`Response of ${declared} bytes exceeds the limit of ${maxBytes} bytes`);
				}
				const buffer = await readCapped(response.body, maxBytes, () => controller.abort());
				const contentType = String(response.headers["content-type"] ?? "");
				const bodyText = isTextual(contentType) ? buffer.toString("utf8") : "";
				if (response.statusCode < 200 || response.statusCode > 299) {
					const excerpt = bodyText.length > EXCERPT_CHARS ? `${bodyText.slice(0, EXCERPT_CHARS)}…` : bodyText;
					throw new Error(
						`HTTP ${response.statusCode} from ${url.origin}${url.pathname}${excerpt ? `: ${excerpt}` : ""}`,
					);
				}
				return toResult(response.statusCode, contentType, buffer, bodyText);
			} catch (error) {
				if (timedOut)
					throw new Error(`${config.name}: request to ${url.origin}${url.pathname} timed out after ${timeoutMs} ms`);
				throw error;
			} finally {
				clearTimeout(timer);
				signal?.removeEventListener("abort", onAbort);
			}
		},
	};
}

function isTextual(contentType: string): boolean {
	return contentType === "" || /^text\/|json|xml|javascript|x-www-form-urlencoded/i.test(contentType);
}

function toResult(
	status: number,
	contentType: string,
	buffer: Buffer,
	bodyText: string,
): AgentToolResult<HttpToolDetails> {
	const details: HttpToolDetails = { status, bytes: buffer.length, ...(contentType ? { contentType } : {}) };
	let content: (TextContent | ImageContent)[];
	if (/json/i.test(contentType)) {
		try {
			details.json = JSON.parse(bodyText);
		} catch {
			// A server that mislabels its body: the text still reaches the model as it is.
		}
		content = [{ type: "text", text: bodyText }];
	} else if (/^image\//i.test(contentType)) {
		content = [{ type: "image", data: buffer.toString("base64"), mimeType: contentType.split(";")[0]!.trim() }];
	} else if (isTextual(contentType)) {
		content = [{ type: "text", text: bodyText }];
	} else {
		content = [{ type: "text", text: `[${buffer.length} bytes of ${contentType}]` }];
	}
	if (content[0]?.type === "text" && content[0].text === "")
		content = [{ type: "text", text: `(HTTP ${status}, empty body)` }];
	return { content, details };
}

/** Builds every configured HTTP tool; throws naming the first bad entry (`tools.httpTools[i]...`). */
export function createHttpTools(configs: HttpToolConfig[] = [], env: NodeJS.ProcessEnv = process.env): HttpAgentTool[] {
	const seen = new Set<string>();
	return configs.map((config, i) => {
		if (seen.has(config.name)) throw new Error(`tools.httpTools[${i}].name: duplicate tool name "${config.name}"`);
		seen.add(config.name);
		return createHttpTool(config, { env, where: `tools.httpTools[${i}]` });
	});
}
