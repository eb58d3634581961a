/**
 * The page's REST calls to the `/v1` API of the server that served it, with the API key the user
 * gave (kept in this tab's sessionStorage only). A 401 asks for a key; every other failure is an
 * {@link ApiError} carrying the server's error envelope.
 */

const KEY_STORAGE = "wheelhouse.apiKey";

/** A non-2xx answer: `code` and `message` from the `{ error: { code, message } }` envelope. */
export class ApiError extends Error {
	constructor(
		readonly status: number,
		readonly code: string,
		message: string,
	) {
		super(message);
		this.name = "ApiError";
	}
}

export class Api {
	/** Called on a 401, with the server's message; the page shows the key form. */
	onUnauthorized: (message: string) => void = () => {};

	get apiKey(): string {
		return sessionStorage.getItem(KEY_STORAGE) ?? "";
	}

	set apiKey(value: string) {
		if (value) sessionStorage.setItem(KEY_STORAGE, value);
		else sessionStorage.removeItem(KEY_STORAGE);
	}

	/** Headers every request carries. */
	headers(): Record<string, string> {
		return this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {};
	}

	async call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
		const headers = this.headers();
		if (body !== undefined) headers["content-type"] = "application/json";
		const response = await fetch(path, {
			method,
			headers,
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const text = await response.text();
		let data: any;
		try {
			data = text ? JSON.parse(text) : undefined;
		} catch {
			data = text;
		}
		if (response.ok) return data as T;
		const code: string = data?.error?.code ?? `HTTP_${response.status}`;
		const message: string = data?.error?.message ?? `HTTP ${response.status}`;
		if (response.status === 401) this.onUnauthorized(message);
		throw new ApiError(response.status, code, message);
	}
}
