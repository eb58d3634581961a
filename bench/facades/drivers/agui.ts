/** AG-UI: `POST /agui/v1/run` with a `RunAgentInput` on a new thread (its session is created inside the request). */
import { randomUUID } from "node:crypto";
import type { FacadeDriver } from "../driver.js";

export const driver: FacadeDriver = {
	name: "AG-UI run",
	deltaNeedle: '"TEXT_MESSAGE_CONTENT"',
	async prepare(baseUrl, prompt) {
		return {
			method: "POST",
			url: `${baseUrl}/agui/v1/run`,
			headers: { "content-type": "application/json", accept: "text/event-stream" },
			body: JSON.stringify({
				threadId: `bench-${randomUUID()}`,
				runId: randomUUID(),
				messages: [{ id: randomUUID(), role: "user", content: prompt }],
				tools: [],
				context: [],
				state: {},
				forwardedProps: { wheelhouse: { model: "faux/echo" } },
			}),
		};
	},
};
