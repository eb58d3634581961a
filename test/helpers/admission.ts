/**
 * Helpers of the admission tests (`auth.admission: "queue"`): two tenants' API keys and their
 * config, calls with a key, waiting for sessions to finish, and the runs as the store recorded
 * them (to check order and concurrency from the store's own clock).
 */
export const KEY_A = "admission-tenant-a-key-0001";
export const KEY_B = "admission-tenant-b-key-0001";

/** The config file's `auth`: both keys with their tenant, 2 runs per tenant, queue past it. */
export function admissionAuth(maxRunsPerTenant = 2): Record<string, unknown> {
	return {
		keyTenants: { [KEY_A]: "org-a", [KEY_B]: "org-b" },
		maxRunsPerTenant,
		admission: "queue",
	};
}

export async function call(
	base: string,
	method: string,
	path: string,
	key: string,
	body?: unknown,
): Promise<{ status: number; body: any }> {
	const res = await fetch(`${base}${path}`, {
		method,
		headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await res.text();
	return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A message the echo model answers word by word: `n` words, each `WHEELHOUSE_FAUX_DELAY_MS` apart. */
export function slowMessage(tag: string, n = 10): string {
	return Array.from({ length: n }, () => tag).join(" ");
}

/** Polls `check` until it returns a value (not undefined), or fails after `timeoutMs`. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await check();
		if (value !== undefined) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
}

/** A run as the store recorded it. */
export interface StoredRun {
	sessionId: string;
	status: string;
	startedAt: number;
	endedAt: number | null;
}

/** The most runs of `runs` that overlapped at one moment (intervals [start, end)). */
export function maxConcurrent(runs: StoredRun[]): number {
	const points = runs.flatMap((r) => [
		{ at: r.startedAt, d: 1 },
		{ at: r.endedAt ?? Number.MAX_SAFE_INTEGER, d: -1 },
	]);
	points.sort((a, b) => a.at - b.at || a.d - b.d);
	let now = 0;
	let max = 0;
	for (const p of points) {
		now += p.d;
		max = Math.max(max, now);
	}
	return max;
}
