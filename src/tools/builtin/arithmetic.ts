/**
 * A small arithmetic language, parsed by recursive descent and evaluated on the parse tree.
 * Never `eval` or `Function`: the only things an expression can reach are the operators,
 * functions and constants listed here.
 *
 * Grammar (lowest precedence first; `^` binds tighter than unary minus, so `-2^2` is -4):
 *
 * ```
 * expression := term (("+" | "-") term)*
 * term       := unary (("*" | "/" | "%") unary)*
 * unary      := ("-" | "+") unary | power
 * power      := primary ("^" unary)?              right-associative
 * primary    := number | name | name "(" args ")" | "(" expression ")"
 * number     := digits ["." digits] | "." digits, optionally followed by e[+-]digits
 * ```
 */

/** A bad expression or an undefined result; `position` is the 0-based character offset. */
export class ArithmeticError extends Error {
	constructor(
		message: string,
		readonly position: number,
	) {
		super(`${message} at position ${position}`);
		this.name = "ArithmeticError";
	}
}

type Token =
	| { kind: "number"; value: number; pos: number; text: string }
	| { kind: "name"; name: string; pos: number; text: string }
	| { kind: "op"; op: string; pos: number; text: string }
	| { kind: "end"; pos: number; text: string };

const NUMBER = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const OPERATORS = new Set(["+", "-", "*", "/", "%", "^", "(", ")", ","]);

function tokenize(source: string): Token[] {
	const tokens: Token[] = [];
	let i = 0;
	while (i < source.length) {
		const ch = source[i]!;
		if (/\s/.test(ch)) {
			i++;
			continue;
		}
		NUMBER.lastIndex = i;
		const num = NUMBER.exec(source);
		if (num) {
			tokens.push({ kind: "number", value: Number(num[0]), pos: i, text: num[0] });
			i += num[0].length;
			continue;
		}
		NAME.lastIndex = i;
		const name = NAME.exec(source);
		if (name) {
			tokens.push({ kind: "name", name: name[0].toLowerCase(), pos: i, text: name[0] });
			i += name[0].length;
			continue;
		}
		// `**` is accepted as a common spelling of `^`.
		if (ch === "*" && source[i + 1] === "*") {
			tokens.push({ kind: "op", op: "^", pos: i, text: "**" });
			i += 2;
			continue;
		}
		if (OPERATORS.has(ch)) {
			tokens.push({ kind: "op", op: ch, pos: i, text: ch });
			i++;
			continue;
		}
		throw new ArithmeticError(`Unexpected character '${ch}'`, i);
	}
	tokens.push({ kind: "end", pos: source.length, text: "end of input" });
	return tokens;
}

const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E, tau: 2 * Math.PI };

interface FunctionSpec {
	min: number;
	max: number;
	fn: (...args: number[]) => number;
}

const FUNCTIONS: Record<string, FunctionSpec> = {
	sqrt: { min: 1, max: 1, fn: Math.sqrt },
	cbrt: { min: 1, max: 1, fn: Math.cbrt },
	abs: { min: 1, max: 1, fn: Math.abs },
	min: { min: 1, max: Number.POSITIVE_INFINITY, fn: Math.min },
	max: { min: 1, max: Number.POSITIVE_INFINITY, fn: Math.max },
	round: {
		min: 1,
		max: 2,
		fn: (x, digits = 0) => {
			const f = 10 ** digits;
			return Math.round(x * f) / f;
		},
	},
	floor: { min: 1, max: 1, fn: Math.floor },
	ceil: { min: 1, max: 1, fn: Math.ceil },
	trunc: { min: 1, max: 1, fn: Math.trunc },
	sign: { min: 1, max: 1, fn: Math.sign },
	exp: { min: 1, max: 1, fn: Math.exp },
	ln: { min: 1, max: 1, fn: Math.log },
	/** `log(x)` is base 10; `log(x, b)` is base b. */
	log: { min: 1, max: 2, fn: (x, base) => (base === undefined ? Math.log10(x) : Math.log(x) / Math.log(base)) },
	log2: { min: 1, max: 1, fn: Math.log2 },
	log10: { min: 1, max: 1, fn: Math.log10 },
	sin: { min: 1, max: 1, fn: Math.sin },
	cos: { min: 1, max: 1, fn: Math.cos },
	tan: { min: 1, max: 1, fn: Math.tan },
	asin: { min: 1, max: 1, fn: Math.asin },
	acos: { min: 1, max: 1, fn: Math.acos },
	atan: { min: 1, max: 1, fn: Math.atan },
	atan2: { min: 2, max: 2, fn: Math.atan2 },
	pow: { min: 2, max: 2, fn: Math.pow },
	hypot: { min: 1, max: Number.POSITIVE_INFINITY, fn: Math.hypot },
};

/** Names usable in expressions, for tool descriptions and error hints. */
export const ARITHMETIC_FUNCTIONS = Object.keys(FUNCTIONS);
export const ARITHMETIC_CONSTANTS = Object.keys(CONSTANTS);

/** Longest accepted expression; bounds recursion depth and work per call. */
export const MAX_EXPRESSION_LENGTH = 2000;
const MAX_DEPTH = 200;

class Parser {
	private index = 0;
	private depth = 0;

	constructor(private readonly tokens: Token[]) {}

	parse(): number {
		const value = this.expression();
		const next = this.peek();
		if (next.kind !== "end") throw new ArithmeticError(`Unexpected '${next.text}'`, next.pos);
		return value;
	}

	private peek(): Token {
		return this.tokens[this.index]!;
	}

	private next(): Token {
		return this.tokens[this.index++]!;
	}

	private isOp(op: string): boolean {
		const t = this.peek();
		return t.kind === "op" && t.op === op;
	}

	private expect(op: string): Token {
		const t = this.next();
		if (t.kind !== "op" || t.op !== op) throw new ArithmeticError(`Expected '${op}' but found '${t.text}'`, t.pos);
		return t;
	}

	private expression(): number {
		if (++this.depth > MAX_DEPTH) throw new ArithmeticError("Expression nested too deeply", this.peek().pos);
		let value = this.term();
		while (this.isOp("+") || this.isOp("-")) {
			const op = this.next() as Extract<Token, { kind: "op" }>;
			const right = this.term();
			value = op.op === "+" ? value + right : value - right;
		}
		this.depth--;
		return value;
	}

	private term(): number {
		let value = this.unary();
		while (this.isOp("*") || this.isOp("/") || this.isOp("%")) {
			const op = this.next() as Extract<Token, { kind: "op" }>;
			const right = this.unary();
			if ((op.op === "/" || op.op === "%") && right === 0) {
				throw new ArithmeticError(op.op === "/" ? "Division by zero" : "Modulo by zero", op.pos);
			}
			value = op.op === "*" ? value * right : op.op === "/" ? value / right : value % right;
		}
		return value;
	}

	private unary(): number {
		if (this.isOp("-") || this.isOp("+")) {
			const op = this.next() as Extract<Token, { kind: "op" }>;
			if (++this.depth > MAX_DEPTH) throw new ArithmeticError("Expression nested too deeply", op.pos);
			const value = this.unary();
			this.depth--;
			return op.op === "-" ? -value : value;
		}
		return this.power();
	}

	private power(): number {
		const base = this.primary();
		if (this.isOp("^")) {
			this.next();
			if (++this.depth > MAX_DEPTH) throw new ArithmeticError("Expression nested too deeply", this.peek().pos);
			const exponent = this.unary();
			this.depth--;
			return base ** exponent;
		}
		return base;
	}

	private primary(): number {
		const t = this.next();
		switch (t.kind) {
			case "number":
				return t.value;
			case "name":
				return this.isOp("(") ? this.call(t) : this.constant(t);
			case "op":
				if (t.op === "(") {
					const value = this.expression();
					this.expect(")");
					return value;
				}
				throw new ArithmeticError(`Unexpected '${t.text}'`, t.pos);
			case "end":
				throw new ArithmeticError("Unexpected end of input", t.pos);
		}
	}

	private constant(t: Extract<Token, { kind: "name" }>): number {
		// Own-property lookups only: `constructor` or `__proto__` must not reach Object.prototype.
		const value = Object.hasOwn(CONSTANTS, t.name) ? CONSTANTS[t.name] : undefined;
		if (value === undefined) {
			const hint = Object.hasOwn(FUNCTIONS, t.name) ? ` (functions need parentheses: ${t.name}(x))` : "";
			throw new ArithmeticError(`Unknown name '${t.text}'${hint}`, t.pos);
		}
		return value;
	}

	private call(t: Extract<Token, { kind: "name" }>): number {
		const spec = Object.hasOwn(FUNCTIONS, t.name) ? FUNCTIONS[t.name] : undefined;
		if (!spec) throw new ArithmeticError(`Unknown function '${t.text}'`, t.pos);
		this.expect("(");
		const args: number[] = [];
		if (!this.isOp(")")) {
			args.push(this.expression());
			while (this.isOp(",")) {
				this.next();
				args.push(this.expression());
			}
		}
		this.expect(")");
		if (args.length < spec.min || args.length > spec.max) {
			const expected =
				spec.min === spec.max
					? `${spec.min}`
					: spec.max === Number.POSITIVE_INFINITY
						? `at least ${spec.min}`
						: `${spec.min} to ${spec.max}`;
			throw new ArithmeticError(`${t.name}() takes ${expected} argument(s), got ${args.length}`, t.pos);
		}
		return spec.fn(...args);
	}
}

/**
 * Evaluates an arithmetic expression.
 * Throws {@link ArithmeticError} for bad syntax, unknown names, division by zero, or a result
 * that is not a finite number (e.g. `sqrt(-1)`, `10^400`).
 */
export function evaluateArithmetic(source: string): number {
	if (source.length > MAX_EXPRESSION_LENGTH) {
		throw new ArithmeticError(`Expression longer than ${MAX_EXPRESSION_LENGTH} characters`, MAX_EXPRESSION_LENGTH);
	}
	const tokens = tokenize(source);
	if (tokens.length === 1) throw new ArithmeticError("Empty expression", 0);
	const value = new Parser(tokens).parse();
	if (Number.isNaN(value)) throw new ArithmeticError("Result is not a number (undefined operation)", 0);
	if (!Number.isFinite(value)) throw new ArithmeticError("Result is infinite or too large", 0);
	return value;
}

/** Formats a result without binary floating-point noise (`0.1 + 0.2` → `0.3`). */
export function formatNumber(value: number): string {
	if (Object.is(value, -0)) return "0";
	return String(Number.parseFloat(value.toPrecision(15)));
}
