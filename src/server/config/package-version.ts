/**
 * The server package's version, read from its package.json: what the OpenAPI document, the A2A
 * agent card and the MCP server's `serverInfo` report.
 */
import { readFileSync } from "node:fs";

/** The version in package.json; "0.0.0" when it cannot be read. src/ and dist/ both sit three folders below the package root. */
export function packageVersion(): string {
	try {
		return String(JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")).version);
	} catch {
		return "0.0.0";
	}
}
