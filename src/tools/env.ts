/**
 * `${NAME}` substitution for config values (secrets in headers, env of MCP servers).
 * Resolved once at load so a missing variable stops startup instead of failing a tool call later.
 */

/** A config value names an environment variable that is not set. */
export class MissingEnvError extends Error {
	constructor(
		readonly variable: string,
		readonly where: string,
	) {
		super(`${where}: environment variable ${variable} is not set (referenced as \${${variable}})`);
		this.name = "MissingEnvError";
	}
}

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Replaces every `${NAME}` in `value`; throws {@link MissingEnvError} naming `where` for an unset one. */
export function substituteEnv(value: string, where: string, env: NodeJS.ProcessEnv = process.env): string {
	return value.replace(PLACEHOLDER, (_match, name: string) => {
		const resolved = env[name];
		if (resolved === undefined) throw new MissingEnvError(name, where);
		return resolved;
	});
}

/** {@link substituteEnv} over every value of a string map. */
export function substituteEnvRecord(
	values: Record<string, string> | undefined,
	where: string,
	env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
	const out: Record<string, string> = {};
	for (const [key, value] of Object.entries(values ?? {})) out[key] = substituteEnv(value, `${where}.${key}`, env);
	return out;
}
