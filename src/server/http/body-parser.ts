/**
 * The request body parser: JSON only, with a nesting-depth limit checked before parsing.
 *
 * Every later step that walks a body (validation, cloning, the store's serialisation, the
 * providers' request builders) recurses once per level of nesting, so a small body nested a few
 * thousand levels deep overflows the stack somewhere past the point where the request was
 * accepted. The depth is therefore counted on the raw text, in one loop with no recursion, and a
 * body nested deeper than {@link MAX_JSON_DEPTH} is refused with 400 `JSON_TOO_DEEP` before
 * anything is parsed or changed. The text is then parsed by Fastify's own JSON parser, which keeps
 * its prototype-poisoning protection (`__proto__` and `constructor.prototype` keys are refused).
 *
 * Only `application/json` is accepted (Fastify's built-in `text/plain` parser is removed): any
 * other content type is 415 `UNSUPPORTED_MEDIA_TYPE`. An empty body is no body: a route whose
 * body fields are all optional then treats it as `{}` (see `validation.ts`).
 */
import type { FastifyInstance } from "fastify";
import { apiError } from "./errors.js";

/**
 * Deepest nesting of arrays and objects a JSON body may have, counting the body itself as level 1
 * (`{"messages":[{"content":[...]}]}` is 4 levels deep). Far above what any message, tool schema or
 * config needs, and far below what would exhaust the stack of any step that walks the body.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * Whether `text` nests arrays and objects deeper than `limit`, counting brackets outside strings.
 * Malformed text is left to the parser: this only has to be right for text that would parse.
 */
export function exceedsJsonDepth(text: string, limit: number): boolean {
	let depth = 0;
	let inString = false;
	for (let i = 0; i < text.length; i++) {
		const c = text.charCodeAt(i);
		if (inString) {
			if (c === BACKSLASH) i++;
			else if (c === QUOTE) inString = false;
		} else if (c === QUOTE) {
			inString = true;
		} else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
			if (++depth > limit) return true;
		} else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
			depth--;
		}
	}
	return false;
}

/** Replaces Fastify's body parsers with the depth-limited JSON parser. */
export function installBodyParser(app: FastifyInstance): void {
	const parseJson = app.getDefaultJsonParser("error", "error");
	app.removeAllContentTypeParsers();
	app.addContentTypeParser("application/json", { parseAs: "string" }, function parseJsonBody(request, body, done) {
		const text = body as string;
		if (text.length === 0) {
			done(null, undefined);
			return;
		}
		if (exceedsJsonDepth(text, MAX_JSON_DEPTH)) {
			done(
				apiError(
					"JSON_TOO_DEEP",
					`The JSON body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep (the body itself is level 1); flatten it, or send deep structures as a string.`,
				),
				undefined,
			);
			return;
		}
		parseJson(request, text, done);
	});
}
