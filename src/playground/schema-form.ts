/**
 * A form from a tool's JSON Schema (an object schema): a labelled field per property — text for
 * strings (a select for an `enum`), a number field for numbers and integers, a checkbox for
 * booleans — and a JSON text area for anything else (and for a schema without properties).
 */

export interface SchemaForm {
	element: HTMLElement;
	/** The values as the schema's types; throws a readable Error for JSON that does not parse. */
	read(): Record<string, unknown>;
}

type PropertySchema = { type?: string | string[]; enum?: unknown[]; description?: string; title?: string };

export function schemaForm(schema: unknown, values: Record<string, unknown>): SchemaForm {
	const prefix = `sf-${Math.random().toString(36).slice(2, 10)}`;
	const element = document.createElement("div");
	element.className = "stack";
	const properties = (schema as { properties?: Record<string, PropertySchema> } | undefined)?.properties;
	const readers: [string, () => unknown][] = [];

	if (!properties || Object.keys(properties).length === 0) {
		const id = `${prefix}-json`;
		element.append(label(id, "Arguments (JSON)"));
		const area = document.createElement("textarea");
		area.id = id;
		area.rows = 4;
		area.value = JSON.stringify(values ?? {}, null, 2);
		element.append(area);
		return { element, read: () => parseJson(area.value, "Arguments") };
	}

	for (const [name, property] of Object.entries(properties)) {
		const id = `${prefix}-${name.replace(/[^\w-]/g, "_")}`;
		const type = Array.isArray(property.type) ? property.type[0] : property.type;
		const value = values?.[name];
		const title = property.title ?? name;
		if (Array.isArray(property.enum)) {
			element.append(label(id, title));
			const select = document.createElement("select");
			select.id = id;
			for (const option of property.enum) select.append(new Option(String(option), JSON.stringify(option)));
			if (value !== undefined) select.value = JSON.stringify(value);
			element.append(select);
			readers.push([name, () => JSON.parse(select.value)]);
		} else if (type === "boolean") {
			const box = document.createElement("input");
			box.type = "checkbox";
			box.id = id;
			box.checked = value === true;
			const row = document.createElement("div");
			row.className = "tool-row";
			row.append(box, label(id, title));
			element.append(row);
			readers.push([name, () => box.checked]);
		} else if (type === "number" || type === "integer") {
			element.append(label(id, title));
			const input = document.createElement("input");
			input.type = "number";
			input.id = id;
			if (type === "integer") input.step = "1";
			else input.step = "any";
			if (typeof value === "number") input.value = String(value);
			element.append(input);
			readers.push([name, () => (input.value === "" ? undefined : Number(input.value))]);
		} else if (type === "string") {
			element.append(label(id, title));
			const input = document.createElement("input");
			input.type = "text";
			input.id = id;
			if (typeof value === "string") input.value = value;
			element.append(input);
			readers.push([name, () => input.value]);
		} else {
			element.append(label(id, `${title} (JSON)`));
			const area = document.createElement("textarea");
			area.id = id;
			area.rows = 2;
			area.value = value === undefined ? "" : JSON.stringify(value);
			element.append(area);
			readers.push([name, () => (area.value.trim() ? parseJson(area.value, title) : undefined)]);
		}
		if (property.description) {
			const hint = document.createElement("p");
			hint.className = "hint";
			hint.textContent = property.description;
			element.append(hint);
		}
	}
	return {
		element,
		read() {
			const out: Record<string, unknown> = {};
			for (const [name, read] of readers) {
				const value = read();
				if (value !== undefined) out[name] = value;
			}
			return out;
		},
	};
}

function label(id: string, text: string): HTMLLabelElement {
	const element = document.createElement("label");
	element.htmlFor = id;
	element.textContent = text;
	return element;
}

function parseJson(text: string, what: string): any {
	try {
		return JSON.parse(text);
	} catch (error) {
		throw new Error(`${what}: not valid JSON (${(error as Error).message})`);
	}
}
