/**
 * A local webhook receiver (node:http) that verifies every request with the `standardwebhooks`
 * library, as a real receiver would, and records it. It can answer with a status of the test's
 * choosing, require an `Authorization` header (401 without it), and stop and start listening on
 * the same port (a receiver that is down), or take unsigned requests.
 */
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface ReceivedWebhook {
	id: string;
	/** Whether the signature verified (a request that does not is answered 400). */
	verified: boolean;
	headers: IncomingHttpHeaders;
	body: any;
	/** The status answered. */
	status: number;
}

export interface WebhookReceiver {
	url: string;
	port: number;
	received: ReceivedWebhook[];
	/** Verified requests answered 2xx, by event type. */
	delivered(type?: string): ReceivedWebhook[];
	/** The status the next requests get (default 204; 0 = no answer at all). */
	respondWith(status: number): void;
	/** Resolves once `predicate` holds of what was received (checked on every request). */
	waitFor(predicate: (received: ReceivedWebhook[]) => boolean, timeoutMs?: number): Promise<void>;
	/** Stops listening (connections are refused) until `start()`. */
	stop(): Promise<void>;
	start(): Promise<void>;
	close(): Promise<void>;
}

/** A fresh Standard Webhooks secret (`whsec_` + base64 of 32 random bytes). */
export function newSecret(): string {
	return `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;
}

export interface WebhookReceiverOptions {
	/** The `Authorization` header a request must carry; one without it is answered 401. Default: none needed. */
	authorization?: string;
	/** Take requests without a Standard Webhooks signature (A2A push notifications carry none). Default false. */
	unsigned?: boolean;
}

export async function startWebhookReceiver(
	secret: string,
	port = 0,
	options: WebhookReceiverOptions = {},
): Promise<WebhookReceiver> {
	const verifier = new Webhook(secret);
	const received: ReceivedWebhook[] = [];
	const waiters = new Set<() => void>();
	let status = 204;
	let server: Server | undefined;
	let boundPort = port;

	const listen = async () => {
		server = createServer((req, res) => {
			const chunks: Buffer[] = [];
			req.on("data", (chunk: Buffer) => chunks.push(chunk));
			req.on("end", () => {
				const text = Buffer.concat(chunks).toString("utf8");
				let verified = true;
				try {
					if (!options.unsigned) verifier.verify(text, req.headers as Record<string, string>);
				} catch {
					verified = false;
				}
				const authorized = options.authorization === undefined || req.headers.authorization === options.authorization;
				const answer = !verified ? 400 : !authorized ? 401 : status;
				received.push({
					id: String(req.headers["webhook-id"]),
					verified,
					headers: req.headers,
					body: JSON.parse(text),
					status: answer,
				});
				if (answer !== 0) res.writeHead(answer).end(); // 0: never answer (a receiver that hangs)
				for (const wake of waiters) wake();
			});
		});
		server.listen(boundPort, "127.0.0.1");
		await once(server, "listening");
		boundPort = (server.address() as AddressInfo).port;
	};
	const stop = async () => {
		if (!server) return;
		const closing = once(server, "close");
		server.close();
		server.closeAllConnections();
		await closing;
		server = undefined;
	};
	await listen();

	return {
		get url() {
			return `http://127.0.0.1:${boundPort}/hooks`;
		},
		get port() {
			return boundPort;
		},
		received,
		delivered: (type) =>
			received.filter((r) => r.verified && r.status < 300 && (type === undefined || r.body.type === type)),
		respondWith(next) {
			status = next;
		},
		waitFor(predicate, timeoutMs = 15_000) {
			if (predicate(received)) return Promise.resolve();
			return new Promise((resolve, reject) => {
				const timer = setTimeout(() => {
					waiters.delete(check);
					reject(
						new Error(
							`webhook receiver: not received in time; got ${JSON.stringify(received.map((r) => [r.body?.type, r.status]))}`,
						),
					);
				}, timeoutMs);
				const check = () => {
					if (!predicate(received)) return;
					clearTimeout(timer);
					waiters.delete(check);
					resolve();
				};
				waiters.add(check);
			});
		},
		stop,
		start: listen,
		close: stop,
	};
}
