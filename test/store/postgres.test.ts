import { it } from "vitest";
import { PostgresSessionStore } from "../../src/store/postgres/index.js";
import { havePostgres, NO_POSTGRES, PG_URL, testSchemas } from "../helpers/postgres.js";
import { runStoreContract } from "./contract.js";
import { runWebhookOutboxContract } from "./contract-webhooks.js";

const schemas = testSchemas("contract");

if (await havePostgres()) {
	// A fresh schema per store; a short flush interval keeps the timer path exercised.
	runStoreContract(
		"postgres",
		(options) =>
			new PostgresSessionStore({ ...options, url: PG_URL, schema: schemas.next(), poolSize: 3, flushIntervalMs: 1 }),
	);
	runWebhookOutboxContract(
		"postgres",
		(options) =>
			new PostgresSessionStore({ ...options, url: PG_URL, schema: schemas.next(), poolSize: 3, flushIntervalMs: 1 }),
	);
	runStoreContract(
		"postgres, cluster mode (fenced commits)",
		(options) =>
			new PostgresSessionStore({ ...options, url: PG_URL, schema: schemas.next(), poolSize: 3, cluster: true }),
	);
} else {
	it.skip(`SessionStore contract: postgres (${NO_POSTGRES})`, () => {});
}
