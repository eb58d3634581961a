/**
 * The Gemini args helper: Vertex AI streams a function call's arguments as path/value pieces
 * (`partialArgs`); this turns them into the JSON text every other wire API streams. Its own file,
 * holding its input type too, so google-gemini.ts imports it and nothing imports back.
 */

/** One piece of a Vertex `streamFunctionCallArguments` call: a value (or string piece) at a JSON path. */
export interface GeminiPartialArg {
	jsonPath: string;
	stringValue?: string;
	numberValue?: number;
	boolValue?: boolean;
	nullValue?: unknown;
	willContinue?: boolean;
}

type Segment = string | number;

/**
 * Turns Vertex AI streamed function-call arguments (`partialArgs`: a JSON path and a value, strings
 * possibly in several pieces with `willContinue`) into JSON *text*, written as the pieces arrive, so
 * the output builder can grow `ToolCall.arguments` with the partial-JSON parser exactly as it does for
 * APIs that stream JSON text.
 *
 * Pieces are expected in document order (they are: the model writes the object front to back). The
 * same pieces are also applied to a plain object ({@link value}); if a piece ever arrives out of order
 * the text could diverge, so {@link consistent} tells the caller to use {@link value} instead.
 */
export class StreamedArgs {
	/** The arguments as an object, built path by path. */
	readonly value: Record<string, unknown> = {};
	private rootOpen = false;
	/** Open containers below the root: their path segment and how many members each has. */
	private readonly stack: { segment: Segment; container: "object" | "array"; count: number }[] = [];
	private rootCount = 0;
	private openString: string | undefined;
	private text = "";
	private ordered = true;

	/** Adds one piece; returns the JSON text it appends (possibly empty). */
	add(piece: GeminiPartialArg): string {
		const before = this.text.length;
		const path = parseJsonPath(piece.jsonPath);
		if (!path || path.length === 0) {
			this.ordered = false;
			return "";
		}
		const key = path.map(String).join("\u0000");
		const isString = typeof piece.stringValue === "string";
		const literal = isString
			? undefined
			: "numberValue" in piece
				? piece.numberValue
				: "boolValue" in piece
					? piece.boolValue
					: null;
		setAtPath(this.value, path, isString ? piece.stringValue : literal, isString);

		if (this.openString !== undefined) {
			if (this.openString === key && isString) {
				this.text += escapeJsonString(piece.stringValue!);
				if (!piece.willContinue) this.closeString();
				return this.text.slice(before);
			}
			this.closeString();
		}
		this.moveTo(path);
		const parent = this.stack.at(-1);
		if ((parent ? parent.count : this.rootCount) > 0) this.text += ",";
		const last = path[path.length - 1]!;
		if ((parent?.container ?? "object") === "object") this.text += `${JSON.stringify(String(last))}:`;
		if (parent) parent.count++;
		else this.rootCount++;
		if (isString) {
			this.text += `"${escapeJsonString(piece.stringValue!)}`;
			if (piece.willContinue) this.openString = key;
			else this.text += '"';
		} else {
			this.text += JSON.stringify(literal ?? null);
		}
		return this.text.slice(before);
	}

	/** Closes whatever is open; returns the closing text. After this, the text is the complete JSON. */
	finish(): string {
		const before = this.text.length;
		if (this.openString !== undefined) this.closeString();
		if (!this.rootOpen) this.text += "{";
		this.rootOpen = true;
		while (this.stack.length > 0) this.text += this.stack.pop()!.container === "object" ? "}" : "]";
		this.text += "}";
		return this.text.slice(before);
	}

	/** False when the written text may not match {@link value} (an out-of-order or unparseable piece). */
	get consistent(): boolean {
		if (!this.ordered) return false;
		try {
			return JSON.stringify(JSON.parse(this.text)) === JSON.stringify(this.value);
		} catch {
			return false;
		}
	}

	private closeString(): void {
		this.text += '"';
		this.openString = undefined;
	}

	/** Closes and opens containers so the parent of `path` is the innermost open one. */
	private moveTo(path: Segment[]): void {
		if (!this.rootOpen) {
			this.text += "{";
			this.rootOpen = true;
		}
		const parentPath = path.slice(0, -1);
		let common = 0;
		while (
			common < this.stack.length &&
			common < parentPath.length &&
			this.stack[common]!.segment === parentPath[common]
		) {
			common++;
		}
		while (this.stack.length > common) this.text += this.stack.pop()!.container === "object" ? "}" : "]";
		for (let depth = common; depth < parentPath.length; depth++) {
			const segment = parentPath[depth]!;
			const parent = this.stack.at(-1);
			if ((parent ? parent.count : this.rootCount) > 0) this.text += ",";
			if ((parent?.container ?? "object") === "object") this.text += `${JSON.stringify(String(segment))}:`;
			if (parent) parent.count++;
			else this.rootCount++;
			const child = depth + 1 < parentPath.length ? parentPath[depth + 1] : path[path.length - 1];
			const container = typeof child === "number" ? "array" : "object";
			this.text += container === "object" ? "{" : "[";
			this.stack.push({ segment, container, count: 0 });
		}
	}
}

function escapeJsonString(text: string): string {
	return JSON.stringify(text).slice(1, -1);
}

/** `$.a.b[0]['c d']` → `["a", "b", 0, "c d"]`; undefined when it is not such a path. */
export function parseJsonPath(path: string): Segment[] | undefined {
	if (!path.startsWith("$")) return undefined;
	const segments: Segment[] = [];
	const token = /\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]/y;
	let position = 1;
	while (position < path.length) {
		token.lastIndex = position;
		const match = token.exec(path);
		if (!match) return undefined;
		if (match[1] !== undefined) segments.push(match[1]);
		else if (match[2] !== undefined) segments.push(Number(match[2]));
		else segments.push((match[3] ?? match[4])!.replace(/\\(.)/g, "$1"));
		position = token.lastIndex;
	}
	return segments;
}

function setAtPath(root: Record<string, unknown>, path: Segment[], value: unknown, appendString: boolean): void {
	let node: any = root;
	for (let i = 0; i < path.length - 1; i++) {
		const segment = path[i]!;
		if (node[segment] === undefined || typeof node[segment] !== "object" || node[segment] === null) {
			node[segment] = typeof path[i + 1] === "number" ? [] : {};
		}
		node = node[segment];
	}
	const last = path[path.length - 1]!;
	node[last] = appendString && typeof node[last] === "string" ? node[last] + value : value;
}
