import { describe, expect, it } from "vitest";
import {
	ArithmeticError,
	createCalculateTool,
	evaluateArithmetic,
	formatNumber,
} from "../../../src/tools/builtin/index.js";

describe("evaluateArithmetic", () => {
	it.each([
		["1 + 2 * 3", 7],
		["(1 + 2) * 3", 9],
		["10 - 4 - 3", 3],
		["2 ^ 3 ^ 2", 512],
		["2 ** 10", 1024],
		["-2 ^ 2", -4],
		["(-2) ^ 2", 4],
		["--3", 3],
		["+4 - -1", 5],
		["7 % 4", 3],
		["1.5e3 + .5", 1500.5],
		["2E-2 * 100", 2],
		["sqrt(16) + abs(-3)", 7],
		["min(4, 2, 8) + max(1, 9)", 11],
		["round(2.345, 2)", 2.35],
		["floor(-1.5) + ceil(1.2)", 0],
		["log(1000)", 3],
		["log(8, 2)", 3],
		["ln(e)", 1],
		["sin(0) + cos(0) + tan(0)", 1],
		["2 * pi", 2 * Math.PI],
		["PI", Math.PI],
		["  3   ", 3],
	])("%s = %d", (expression, expected) => {
		expect(evaluateArithmetic(expression)).toBeCloseTo(expected, 12);
	});

	it.each([
		["1 / 0", "Division by zero at position 2"],
		["5 % (2 - 2)", "Modulo by zero at position 2"],
		["1 +", "Unexpected end of input at position 3"],
		["2 * (3 + 4", "Expected ')' but found 'end of input' at position 10"],
		["3 $ 4", "Unexpected character '$' at position 2"],
		["foo(1)", "Unknown function 'foo' at position 0"],
		["x + 1", "Unknown name 'x' at position 0"],
		["sqrt", "functions need parentheses"],
		["sqrt(1, 2)", "sqrt() takes 1 argument(s), got 2"],
		["2 3", "Unexpected '3' at position 2"],
		["sqrt(-1)", "not a number"],
		["10 ^ 400", "infinite"],
		["", "Empty expression"],
		[")", "Unexpected ')' at position 0"],
	])("%s fails with %s", (expression, message) => {
		expect(() => evaluateArithmetic(expression)).toThrow(ArithmeticError);
		expect(() => evaluateArithmetic(expression)).toThrow(message);
	});

	it("never reaches JavaScript: identifiers are only its own names", () => {
		expect(() => evaluateArithmetic("constructor")).toThrow("Unknown name");
		expect(() => evaluateArithmetic("process(1)")).toThrow("Unknown function");
		expect(() => evaluateArithmetic("__proto__")).toThrow("Unknown name");
		expect(() => evaluateArithmetic("toString(1)")).toThrow("Unknown function");
	});

	it("rejects deep nesting and overlong input instead of overflowing the stack", () => {
		expect(() => evaluateArithmetic(`${"(".repeat(500)}1${")".repeat(500)}`)).toThrow("nested too deeply");
		expect(() => evaluateArithmetic(`${"-".repeat(1000)}1`)).toThrow("nested too deeply");
		expect(() => evaluateArithmetic(`${"1+".repeat(1500)}1`)).toThrow("longer than");
	});

	it("formats without floating-point noise", () => {
		expect(formatNumber(evaluateArithmetic("0.1 + 0.2"))).toBe("0.3");
		expect(formatNumber(-0)).toBe("0");
		expect(formatNumber(1e21)).toBe("1e+21");
	});
});

describe("calculate tool", () => {
	it("returns the value as text and details", async () => {
		const tool = createCalculateTool();
		const result = await tool.execute("call-1", { expression: "(2 + 3) * 4" });
		expect(result.content).toEqual([{ type: "text", text: "20" }]);
		expect(result.details).toEqual({ expression: "(2 + 3) * 4", value: 20 });
	});

	it("throws on a bad expression so the loop reports an error result", async () => {
		await expect(createCalculateTool().execute("c", { expression: "1 / 0" })).rejects.toThrow("Division by zero");
	});
});
