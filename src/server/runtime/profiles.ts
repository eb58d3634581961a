/**
 * Agent profiles: named session settings from the config file's `profiles` section, which a client
 * names where it would name a model (the OpenAI facade's `model`), in AG-UI's
 * `forwardedProps.wheelhouse.profile`, or as `profile` of `POST /v1/sessions`. A profile is an
 * agent as the operator defines it: a model and whatever else a session config carries (system
 * prompt, server tools, thinking level, approvals, compaction, budget, ...).
 *
 * A profile name has no `/`, so it never collides with a `"provider/id"` model. Profiles are checked
 * at startup, and a bad one is a {@link ConfigError} naming the field
 * (`profiles.support.model: Unknown model "x/y" ...`): their shape and model as soon as the
 * catalog exists, their tools once the server's tools are registered, by the rules of a session's
 * `tools` (exact names must be registered tools, `prefix*` patterns may match none yet).
 */
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { ApprovalPolicySchema } from "../../tools/config.js";
import { isToolPattern, selectorProblem } from "../../tools/selection.js";
import { ConfigError } from "../config/config.js";
import type { ModelCatalog } from "./model-catalog.js";
import { sessionError } from "./session/errors.js";
import type { NewSessionInput } from "./session/manager.js";
import { ModelSpec, PROFILE_NAME, SessionConfigFields } from "./session-config-schema.js";

export const AgentProfileSchema = Type.Object(
	{
		...SessionConfigFields,
		model: ModelSpec,
		// The config file is checked with TypeBox's Value, which cannot check the request bodies' enum.
		toolApprovals: Type.Optional(Type.Record(Type.String(), ApprovalPolicySchema)),
		onInterrupt: Type.Optional(Type.Union([Type.Literal("continue"), Type.Literal("stop")])),
		metadata: Type.Optional(
			Type.Record(Type.String(), Type.String(), { description: "Metadata of every session made from it." }),
		),
	},
	{ additionalProperties: false },
);

/** One profile: `model` and the session settings it gives every session made from it. */
export type AgentProfile = Static<typeof AgentProfileSchema>;

/** The server's profiles by name (empty when none are configured). */
export type AgentProfiles = ReadonlyMap<string, AgentProfile>;

/** The metadata key that names the profile a session was made from. */
export const PROFILE_METADATA_KEY = "profile";

const NAME = new RegExp(PROFILE_NAME.pattern);

/**
 * The config's `profiles` section (`undefined`: none), checked by shape and model. Throws
 * {@link ConfigError} naming the field.
 */
export function profilesFrom(section: unknown, catalog: ModelCatalog): Map<string, AgentProfile> {
	const profiles = new Map<string, AgentProfile>();
	if (section === undefined) return profiles;
	if (typeof section !== "object" || section === null || Array.isArray(section)) {
		throw new ConfigError("profiles", `must be an object of profiles by name ({ "support": { "model": ... } })`);
	}
	for (const [name, entry] of Object.entries(section)) {
		const where = `profiles.${name}`;
		if (!NAME.test(name) || name.length > PROFILE_NAME.maxLength) {
			throw new ConfigError(
				where,
				`a profile name has 1 to ${PROFILE_NAME.maxLength} characters, no "/" (which would make it a model id) and no whitespace`,
			);
		}
		const error = Value.Errors(AgentProfileSchema, entry).First();
		if (error) {
			const got = JSON.stringify(error.value)?.slice(0, 200);
			throw new ConfigError(
				`${where}${error.path.replaceAll("/", ".")}`,
				`${error.message.toLowerCase()} (got ${got})`,
			);
		}
		const profile = entry as AgentProfile;
		const problem = catalog.problem(profile.model);
		if (problem) throw new ConfigError(`${where}.model`, problem.message);
		profiles.set(name, profile);
	}
	return profiles;
}

/**
 * Checks every profile's `tools` against the server tools registered now. Throws
 * {@link ConfigError} naming the field.
 */
export function checkProfileTools(profiles: AgentProfiles, serverTools: ReadonlyMap<string, unknown>): void {
	for (const [name, profile] of profiles) {
		const selectors = profile.tools ?? [];
		const where = `profiles.${name}.tools`;
		const malformed = selectors.map(selectorProblem).find((problem) => problem !== undefined);
		if (malformed) throw new ConfigError(where, malformed);
		const unknown = selectors.filter((selector) => !isToolPattern(selector) && !serverTools.has(selector));
		if (unknown.length > 0) {
			throw new ConfigError(
				where,
				`unknown tool ${unknown.map((tool) => `"${tool}"`).join(", ")}; the server's tools are ${[...serverTools.keys()].join(", ") || "none"}. An MCP server's tools are known once it connects: name them with its pattern (e.g. "files__*") to start without it`,
			);
		}
	}
}

/** System prompt parts joined by a blank line; the empty ones left out. */
export function joinSystemPrompts(...parts: (string | undefined)[]): string {
	return parts.filter((part): part is string => typeof part === "string" && part.length > 0).join("\n\n");
}

/**
 * The settings of a session made (or continued) with profile `name`: the profile's, with the
 * request's own system text after the profile's system prompt (the operator's instructions come
 * first; a client adds to them and never replaces them). `metadata` names the profile.
 */
export function profileSettings(name: string, profile: AgentProfile, requestSystem?: string): NewSessionInput {
	const { metadata, systemPrompt, ...settings } = profile;
	// The schema's unions of literals type as strings: the values are the session config's.
	return {
		...(settings as Omit<NewSessionInput, "metadata" | "systemPrompt">),
		systemPrompt: joinSystemPrompts(systemPrompt, requestSystem),
		metadata: { ...metadata, [PROFILE_METADATA_KEY]: name },
	};
}

/** The profile `name` (a request's `profile` field); throws `UNKNOWN_PROFILE` naming the ones there are. */
export function profileNamed(profiles: AgentProfiles, name: string, field = "body.profile"): AgentProfile {
	const profile = profiles.get(name);
	if (profile) return profile;
	const known = [...profiles.keys()].map((known) => `"${known}"`).join(", ");
	throw sessionError(
		"UNKNOWN_PROFILE",
		`${field}: no agent profile "${name}"; ${known ? `the server has ${known}` : "the server config has no profiles"}.`,
	);
}
