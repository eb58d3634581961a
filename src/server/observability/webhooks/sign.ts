/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the headers of one attempt.
 * The signature is `v1,` + base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}` with the
 * endpoint's key (the base64-decoded part of its `whsec_` secret); the timestamp is the attempt's
 * time in seconds, so a receiver's replay window applies to each retry afresh.
 */
import { createHmac } from "node:crypto";

export function signatureHeaders(key: Buffer, id: string, body: string, now: number): Record<string, string> {
	const timestamp = String(Math.floor(now / 1000));
	const signature = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
	return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": `v1,${signature}` };
}
