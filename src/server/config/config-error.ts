/**
 * The error of a bad setting, and the checks of single values the sections' validators share, in
 * a module of their own so that the validators (the `auth` section's among them) can throw it
 * while the loader calls them.
 */

/** A configuration problem: `field` is the env variable or config-file key; `reason` what is wrong. */
export class ConfigError extends Error {
	constructor(
		readonly field: string,
		readonly reason: string,
	) {
		super(`Invalid configuration: ${field}: ${reason}`);
		this.name = "ConfigError";
	}
}

/** A plain object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value` when it is a string with more than white space; else a ConfigError naming `field`. */
export function nonEmptyString(field: string, value: unknown): string {
	if (typeof value !== "string" || value.trim() === "") throw new ConfigError(field, "must be a non-empty string");
	return value;
}
