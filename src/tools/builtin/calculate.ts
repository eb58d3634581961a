/**
 * The `calculate` tool: arithmetic for the model, evaluated by a real parser.
 */
import { type Static, Type } from "@sinclair/typebox";
import type { AgentTool } from "../../agent/types.js";
import type { IdempotentMark } from "../idempotent.js";
import { ARITHMETIC_CONSTANTS, ARITHMETIC_FUNCTIONS, evaluateArithmetic, formatNumber } from "./arithmetic.js";

const CalculateParameters = Type.Object({
	expression: Type.String({
		description: "Arithmetic expression, e.g. `(1.5 + 2) * sqrt(16) / 3e2` or `max(2, 3) ^ 2 % 5`",
		minLength: 1,
	}),
});

export interface CalculateDetails {
	expression: string;
	value: number;
}

/**
 * `calculate`: evaluates an arithmetic expression with a real parser (see `arithmetic.ts`).
 * A bad expression or an undefined result throws, so the loop reports an error result that names
 * the problem and its position.
 */
export function createCalculateTool(): AgentTool<typeof CalculateParameters, CalculateDetails> & IdempotentMark {
	return {
		name: "calculate",
		// It changes nothing: a call whose result was lost may simply run again.
		idempotent: true,
		label: "Calculator",
		description:
			"Evaluate an arithmetic expression exactly as written. Operators: + - * / % ^ (power), parentheses, " +
			`unary minus, decimals and scientific notation (1.2e-3). Functions: ${ARITHMETIC_FUNCTIONS.join(", ")} ` +
			`(log(x) is base 10, ln(x) natural; trigonometry in radians). Constants: ${ARITHMETIC_CONSTANTS.join(", ")}.`,
		parameters: CalculateParameters,
		async execute(_toolCallId, params: Static<typeof CalculateParameters>) {
			const value = evaluateArithmetic(params.expression);
			return {
				content: [{ type: "text", text: formatNumber(value) }],
				details: { expression: params.expression, value },
			};
		},
	};
}
