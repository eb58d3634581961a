/**
 * The `get_current_time` tool: the wall-clock time in a time zone.
 */
import { type Static, Type } from "@sinclair/typebox";
import type { AgentTool } from "../../agent/types.js";
import type { IdempotentMark } from "../idempotent.js";

const GetCurrentTimeParameters = Type.Object({
	timezone: Type.Optional(
		Type.String({ description: "IANA time zone such as `Europe/Berlin` or `America/New_York`; default UTC" }),
	),
});

export interface CurrentTimeDetails {
	/** ISO 8601 local time in the zone, with its UTC offset. */
	iso: string;
	timezone: string;
	/** Milliseconds since the Unix epoch. */
	epochMs: number;
	weekday: string;
	/** e.g. `+01:00`. */
	utcOffset: string;
}

/** Resolves a user-given zone to its canonical name; throws naming the zone when Intl does not know it. */
function resolveZone(zone: string): string {
	try {
		return new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
	} catch {
		throw new Error(`Unknown time zone "${zone}": use an IANA name such as "Europe/Berlin" or "UTC"`);
	}
}

/** The wall-clock time of `date` in `timeZone`, as parts. */
export function describeTime(date: Date, timeZone: string): CurrentTimeDetails {
	const formatter = new Intl.DateTimeFormat("en-US", {
		timeZone,
		year: "numeric",
		month: "2-digit",
		day: "2-digit",
		hour: "2-digit",
		minute: "2-digit",
		second: "2-digit",
		weekday: "long",
		hourCycle: "h23",
		timeZoneName: "longOffset",
	});
	const parts: Record<string, string> = {};
	for (const part of formatter.formatToParts(date)) parts[part.type] = part.value;
	// longOffset renders as "GMT+01:00", or plain "GMT" for a zero offset.
	const offset = parts.timeZoneName === "GMT" ? "+00:00" : (parts.timeZoneName ?? "GMT").replace("GMT", "");
	const ms = String(date.getUTCMilliseconds()).padStart(3, "0");
	const iso = `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.${ms}${offset}`;
	return { iso, timezone: timeZone, epochMs: date.getTime(), weekday: parts.weekday ?? "", utcOffset: offset };
}

/**
 * `get_current_time`: the current date and time in an IANA zone (default UTC).
 * An unknown zone throws, so the loop reports an error result naming it.
 */
export function createGetCurrentTimeTool(
	now: () => Date = () => new Date(),
): AgentTool<typeof GetCurrentTimeParameters, CurrentTimeDetails> & IdempotentMark {
	return {
		name: "get_current_time",
		// It changes nothing: a call whose result was lost may simply run again.
		idempotent: true,
		label: "Current time",
		description:
			"Get the current date and time. Optionally pass an IANA time zone (e.g. `Asia/Tokyo`); the default is UTC.",
		parameters: GetCurrentTimeParameters,
		async execute(_toolCallId, params: Static<typeof GetCurrentTimeParameters>) {
			const zone = resolveZone(params.timezone?.trim() || "UTC");
			const details = describeTime(now(), zone);
			return {
				content: [{ type: "text", text: `${details.iso} (${details.weekday}, ${details.timezone})` }],
				details,
			};
		},
	};
}
