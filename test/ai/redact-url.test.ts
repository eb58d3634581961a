/**
 * `redactUrl`, the one judge of what in a URL is a secret (the config log, store and Redis
 * errors, webhook logs all call it).
 */
import { describe, expect, it } from "vitest";
import { redactUrl, UNPARSABLE_URL } from "../../src/ai/redact-url.js";

describe("redactUrl", () => {
	it("replaces the password and credential-named query parameters, keeping the rest", () => {
		expect(redactUrl("postgres://app:s3cret@db:5432/wh?sslmode=require")).toBe(
			"postgres://app:redacted@db:5432/wh?sslmode=require",
		);
		expect(redactUrl("https://h/x?api_key=K&accessToken=T&page=2")).toBe(
			"https://h/x?api_key=redacted&accessToken=redacted&page=2",
		);
		expect(redactUrl("https://h/x?page=2")).toBe("https://h/x?page=2");
	});

	it("bare: scheme, host, port and path only", () => {
		expect(redactUrl("http://user:PASS@hooks.example.com:8080/path?token=T&x=1#f", { bare: true })).toBe(
			"http://hooks.example.com:8080/path",
		);
	});

	it("leaves text that is no URL alone; a URL that does not parse is hidden whole", () => {
		expect(redactUrl("just text")).toBe("just text");
		expect(redactUrl("redis://user:p@ss word@host")).toBe("redis://user:redacted@host");
		expect(redactUrl("http://user:pw@[bad/")).toBe(UNPARSABLE_URL);
	});
});
