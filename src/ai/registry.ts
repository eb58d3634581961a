/** The registry of wire APIs that `streamSimple` dispatches on (see {@link registerApiProvider}). */
import type { StreamFunction } from "./event-stream.js";
import type { Api, SimpleStreamOptions } from "./types.js";

/**
 * Wire-API registry: `streamSimple` dispatches on `model.api` to the function registered here.
 * Applications add a wire API with `registerApiProvider(api, fn)` without touching ours; a later
 * registration for the same api replaces the earlier one.
 *
 * Contract of a registered function: the `StreamFn` contract (returns a stream synchronously,
 * never throws, encodes every failure as an `error` event).
 */
export type ApiStreamFunction = StreamFunction<any, SimpleStreamOptions>;

const providers = new Map<string, ApiStreamFunction>();

export function registerApiProvider(api: Api, stream: ApiStreamFunction): void {
	if (typeof stream !== "function") {
		throw new TypeError(
			`registerApiProvider("${api}", fn): fn must be a stream function (model, context, options) => AssistantMessageEventStream`,
		);
	}
	providers.set(api, stream);
}

export function unregisterApiProvider(api: Api): boolean {
	return providers.delete(api);
}

export function getApiProvider(api: Api): ApiStreamFunction | undefined {
	return providers.get(api);
}

export function getRegisteredApis(): string[] {
	return [...providers.keys()];
}
