/** A2A: `SendStreamingMessage` on `POST /a2a/v1`, in a new context (its session is created inside the request). */
import { randomUUID } from "node:crypto";
import type { FacadeDriver } from "../driver.js";

export const driver: FacadeDriver = {
	name: "A2A message stream",
	deltaNeedle: '"artifactUpdate"',
	async prepare(baseUrl, prompt) {
		return {
			method: "POST",
			url: `${baseUrl}/a2a/v1`,
			headers: { "content-type": "application/json", accept: "text/event-stream", "a2a-version": "1.0" },
			body: JSON.stringify({
				jsonrpc: "2.0",
				id: 1,
				method: "SendStreamingMessage",
				params: { message: { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text: prompt }] } },
			}),
		};
	},
};
