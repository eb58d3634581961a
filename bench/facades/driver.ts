/**
 * The contract of a bench/facades driver: how one streaming API of the server asks for an answer
 * and how a text delta looks on its wire. Every file in drivers/ exports one as `driver`; adding a
 * facade to the bench is adding a file there.
 */
import type { StreamRequest } from "../sse/client.js";

export interface FacadeDriver {
	/** Shown in the tables. */
	name: string;
	/** The stream every other one is compared with (exactly one driver). */
	baseline?: boolean;
	/**
	 * What marks one text delta in the stream's bytes (at most 32 characters): the measuring client
	 * counts tokens by it, without parsing.
	 */
	deltaNeedle: string;
	/**
	 * The request that streams the stand-in model's answer to `prompt` (`faux/echo` repeats it, one
	 * word per delta). May make setup requests first (e.g. create a session); those are not timed.
	 */
	prepare(baseUrl: string, prompt: string): Promise<StreamRequest>;
}
