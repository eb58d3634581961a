import { createMemoryStore } from "../../src/store/memory.js";
import { runStoreContract } from "./contract.js";
import { runWebhookOutboxContract } from "./contract-webhooks.js";

runStoreContract("memory", (options) => createMemoryStore(options));
runWebhookOutboxContract("memory", (options) => createMemoryStore(options));
