/**
 * The configuration table of docs/configuration.md is the user's only list of settings: every variable the
 * server reads must be in it, with its real default, and the table must not list settings that
 * no longer exist.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CONFIG_VARS, loadConfig, PROVIDER_KEY_VARS } from "../../../src/server/config/config.js";

const readme = readFileSync(
	path.join(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/configuration.md"),
	"utf8",
);

/** Rows of the table headed `| variable | config-file key | default | meaning |`. */
function configRows(): Map<string, { key: string; default: string }> {
	const lines = readme.split("\n");
	const start = lines.findIndex((l) => l.startsWith("| variable | config-file key | default |"));
	expect(start, "docs/configuration.md has the configuration table").toBeGreaterThan(-1);
	const rows = new Map<string, { key: string; default: string }>();
	for (const line of lines.slice(start + 2)) {
		if (!line.startsWith("|")) break;
		const [env, key, def] = line
			.split("|")
			.slice(1, 4)
			.map((cell) => cell.trim().replace(/^`|`$/g, ""));
		rows.set(env!, { key: key!, default: def === "(unset)" ? "" : def! });
	}
	return rows;
}

describe("docs/configuration.md configuration table", () => {
	it("lists every variable the server reads, with its config key and default", () => {
		const rows = configRows();
		for (const v of CONFIG_VARS) {
			expect(rows.get(v.env), `${v.env} in the docs/configuration.md table`).toEqual({
				key: v.key,
				default: v.default,
			});
		}
		expect([...rows.keys()].sort()).toEqual(CONFIG_VARS.map((v) => v.env).sort());
	});

	it("shows API keys the server accepts, and the header that uses one", () => {
		const example = /`WHEELHOUSE_API_KEYS=([^`\s]+)`/.exec(readme)?.[1];
		expect(example, "docs/configuration.md shows a WHEELHOUSE_API_KEYS value").toBeDefined();
		const keys = loadConfig({ WHEELHOUSE_API_KEYS: example }).apiKeys;
		const bearer = /'authorization: Bearer ([^']+)'/.exec(readme)?.[1];
		expect(keys).toContain(bearer);
	});

	it("names every provider key variable", () => {
		for (const name of Object.values(PROVIDER_KEY_VARS)) expect(readme).toContain(`\`${name}\``);
		expect(readme).toContain("`GOOGLE_API_KEY`");
	});
});
