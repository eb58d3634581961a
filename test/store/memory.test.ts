import { createMemoryStore } from "../../src/store/memory.js";
import { runStoreContract } from "./contract.js";

runStoreContract("memory", (options) => createMemoryStore(options));
