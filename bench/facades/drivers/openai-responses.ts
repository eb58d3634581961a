/** OpenAI Responses, streamed: `POST /openai/v1/responses` (its session is created inside the request). */
import type { FacadeDriver } from "../driver.js";

export const driver: FacadeDriver = {
	name: "OpenAI responses",
	deltaNeedle: '"response.output_text.delta"',
	async prepare(baseUrl, prompt) {
		return {
			method: "POST",
			url: `${baseUrl}/openai/v1/responses`,
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ model: "faux/echo", input: prompt, stream: true }),
		};
	},
};
