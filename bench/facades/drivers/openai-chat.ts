/** OpenAI Chat Completions, streamed: `POST /openai/v1/chat/completions` (its session is created inside the request). */
import type { FacadeDriver } from "../driver.js";

export const driver: FacadeDriver = {
	name: "OpenAI chat completions",
	deltaNeedle: '"delta":{"content":',
	async prepare(baseUrl, prompt) {
		return {
			method: "POST",
			url: `${baseUrl}/openai/v1/chat/completions`,
			headers: { "content-type": "application/json" },
			body: JSON.stringify({ model: "faux/echo", messages: [{ role: "user", content: prompt }], stream: true }),
		};
	},
};
