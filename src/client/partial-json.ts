/**
 * The partial-JSON parser the providers use for streaming tool arguments (`{"a":"hel` →
 * `{a:"hel"}`), shared so the client's rebuilt `arguments` equal the server's at every delta.
 */
export { parseStreamingJson } from "../ai/partial-json.js";
