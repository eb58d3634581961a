/**
 * Request generation for the route fuzz test: a seeded PRNG, and values drawn from the OpenAPI
 * document's schemas — valid-ish ones, then mutated (wrong types, huge and non-finite numbers,
 * deep nesting, unicode, empty values, malformed JSON, wrong content types). Everything is drawn
 * from one PRNG, so a seed reproduces the same sequence of requests.
 */

/** mulberry32: small, fast, deterministic. Returns floats in [0, 1). */
export function createRandom(seed: number) {
	let state = seed >>> 0;
	const next = () => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
	return {
		next,
		/** True with probability `p`. */
		chance: (p: number) => next() < p,
		int: (max: number) => Math.floor(next() * max),
		pick<T>(items: readonly T[]): T {
			return items[Math.floor(next() * items.length)];
		},
	};
}

export type Random = ReturnType<typeof createRandom>;

/** Text that has broken parsers, routers and stores before. */
export const NASTY_STRINGS = [
	"",
	" ",
	"x",
	"faux/echo",
	"nope/none",
	"héllo wörld",
	"日本語のテキスト",
	"🦀🔥\u{1F600}",
	"\u0000",
	"\ud800",
	"a\r\nb",
	"\\",
	'"',
	"../../etc/passwd",
	"%zz",
	"%00",
	"__proto__",
	"constructor",
	"null",
	"true",
	"-1",
	"0",
	"1e20",
	"Infinity",
	"NaN",
	"9007199254740993",
	"<script>alert(1)</script>",
	"*",
	"files__*",
	'/tool calculate {"expression":"1+2"}',
	"/tool get_current_time {}",
	"/tool nope {}",
	"/tool calculate {broken",
	'/tools [{"name":"calculate","arguments":{"expression":"2*3"}}]',
	"x".repeat(300),
	"y".repeat(5000),
];

export const NASTY_NUMBERS = [
	0,
	1,
	-1,
	2,
	50,
	1000,
	1001,
	1.5,
	-0.5,
	1e20,
	-1e20,
	2 ** 53 + 2,
	Number.MAX_SAFE_INTEGER,
	Number.MAX_VALUE,
	5e-324,
];

/** Query and path text: numbers in every spelling, plus the nasty strings. */
export const NASTY_TEXT = [
	...NASTY_STRINGS.slice(0, 30),
	"1",
	"50",
	"00",
	"0x10",
	"1e3",
	"-0",
	"+1",
	" 1",
	"1 ",
	"1.0",
	"Infinity",
	"-Infinity",
	"1e400",
	"99999999999999999999999",
	"steer",
	"followUp",
	"all",
];

type Schema = Record<string, any>;

/** Draws values from schemas of one OpenAPI document (resolving its `$ref`s). */
export class SchemaSampler {
	constructor(
		private readonly random: Random,
		private readonly doc: Schema,
	) {}

	private resolve(schema: Schema): Schema {
		let s = schema;
		for (let i = 0; i < 10 && s && typeof s.$ref === "string"; i++) {
			const path = s.$ref.replace(/^#\//, "").split("/");
			s = path.reduce((node: Schema, key: string) => node?.[key], this.doc);
		}
		return s ?? {};
	}

	/** A value that mostly satisfies `schema` (random choices where it allows several). */
	valid(schema: Schema, depth = 0): unknown {
		const r = this.random;
		const s = this.resolve(schema);
		if (s.const !== undefined) return s.const;
		if (Array.isArray(s.enum)) return r.pick(s.enum);
		const branches = s.anyOf ?? s.oneOf;
		if (Array.isArray(branches)) return this.valid(r.pick(branches), depth);
		const type = Array.isArray(s.type) ? r.pick(s.type) : s.type;
		switch (type) {
			case "object": {
				const out: Record<string, unknown> = {};
				const required = new Set<string>(s.required ?? []);
				for (const [key, child] of Object.entries<Schema>(s.properties ?? {})) {
					if (required.has(key) || (depth < 4 && r.chance(0.4))) out[key] = this.valid(child, depth + 1);
				}
				if (s.additionalProperties && typeof s.additionalProperties === "object" && r.chance(0.5)) {
					out[r.pick(["k", "key", "a b", "é"])] = this.valid(s.additionalProperties, depth + 1);
				} else if (s.additionalProperties === true && r.chance(0.2)) {
					out.extra = this.any(depth + 1);
				}
				return out;
			}
			case "array": {
				const min = s.minItems ?? 0;
				const count = min + r.int(depth < 3 ? 3 : 1);
				return Array.from({ length: count }, () => this.valid(s.items ?? {}, depth + 1));
			}
			case "string":
				if (s.pattern?.includes("image")) return r.pick(["image/png", "image/jpeg"]);
				if (s.pattern?.includes("/")) return r.pick(["faux/echo", "nope/none", "openai/gpt-4o"]);
				if (r.chance(0.5)) return r.pick(["hello", "x", "ok", "calculate", "get_current_time"]);
				return r.pick(NASTY_STRINGS);
			case "integer":
				return r.chance(0.6) ? r.int(5) : r.pick(NASTY_NUMBERS);
			case "number":
				return r.chance(0.6) ? r.int(1000) : r.pick(NASTY_NUMBERS);
			case "boolean":
				return r.chance(0.5);
			case "null":
				return null;
			default:
				return this.any(depth);
		}
	}

	/** Any JSON value. */
	any(depth = 0): unknown {
		const r = this.random;
		switch (r.int(depth > 3 ? 4 : 6)) {
			case 0:
				return r.pick(NASTY_STRINGS);
			case 1:
				return r.pick(NASTY_NUMBERS);
			case 2:
				return r.pick([true, false, null]);
			case 3:
				return "";
			case 4:
				return Array.from({ length: r.int(3) }, () => this.any(depth + 1));
			default: {
				const out: Record<string, unknown> = {};
				for (let i = r.int(3); i > 0; i--) out[r.pick(["role", "content", "type", "x", "name"])] = this.any(depth + 1);
				return out;
			}
		}
	}

	/** `value` with one node replaced by something of another type (or removed). */
	mutate(value: unknown): unknown {
		const r = this.random;
		if (value === null || typeof value !== "object" || r.chance(0.25)) return this.any(2);
		const copy: any = Array.isArray(value) ? [...value] : { ...(value as object) };
		const keys = Object.keys(copy);
		if (keys.length === 0) return r.chance(0.5) ? this.any(2) : copy;
		const key = r.pick(keys);
		if (r.chance(0.2)) delete copy[key];
		else copy[key] = this.mutate(copy[key]);
		return copy;
	}
}

/** Raw body text: JSON of `value`, or one of the ways a body goes wrong. */
export function bodyText(random: Random, sampler: SchemaSampler, value: unknown): string {
	const json = JSON.stringify(value) ?? "null";
	switch (random.int(14)) {
		case 0:
			return "";
		case 1:
			return json.slice(0, Math.max(1, random.int(json.length)));
		case 2:
			return `${"[".repeat(random.pick([10, 63, 64, 65, 200, 5000]))}`;
		case 3: {
			const depth = random.pick([30, 62, 63, 64, 65, 500, 4100]);
			return `{"messages":[{"role":"user","content":${"[".repeat(depth)}1${"]".repeat(depth)}}]}`;
		}
		case 4:
			return random.pick(["null", "true", "0", '"x"', "[]", "1e999", "-1e999", "{}", "{} {}", "\ufeff{}"]);
		case 5:
			return `{"__proto__":{"polluted":1},"message":"x"}`;
		case 6:
			return `{"message":"${"\\u00e9".repeat(random.int(50))}\\ud800","messages":[{"role":"user","content":"\\u0000"}]}`;
		case 7:
			return JSON.stringify(sampler.mutate(value));
		case 8:
			return JSON.stringify(sampler.mutate(sampler.mutate(value)));
		default:
			return json;
	}
}
