/** Wheelhouse's own stream: `POST /v1/sessions/:id/prompt` with `Accept: text/event-stream` (the session is created first, untimed). */
import type { FacadeDriver } from "../driver.js";

export const driver: FacadeDriver = {
	name: "native /v1 SSE",
	baseline: true,
	deltaNeedle: '"type":"text_delta"',
	async prepare(baseUrl, prompt) {
		const res = await fetch(`${baseUrl}/v1/sessions`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ model: "faux/echo" }),
		});
		const { id } = (await res.json()) as { id: string };
		return {
			method: "POST",
			url: `${baseUrl}/v1/sessions/${id}/prompt`,
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({ message: prompt }),
		};
	},
};
