/** pi's streamProxy endpoint: `POST /api/stream`, one model call, no session (the server runs with `WHEELHOUSE_PI_PROXY=on`). */
import type { FacadeDriver } from "../driver.js";

export const driver: FacadeDriver = {
	name: "pi /api/stream",
	deltaNeedle: '"type":"text_delta"',
	async prepare(baseUrl, prompt) {
		return {
			method: "POST",
			url: `${baseUrl}/api/stream`,
			headers: { "content-type": "application/json" },
			body: JSON.stringify({
				model: { provider: "faux", id: "echo" },
				context: { messages: [{ role: "user", content: prompt, timestamp: 0 }] },
			}),
		};
	},
};
