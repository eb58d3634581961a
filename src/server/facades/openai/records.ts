/**
 * What the OpenAI facade keeps in the store to find again on a later request, whichever process
 * serves it (a restarted one, another replica): the session each client tool call of an answer
 * belongs to, the response objects (`GET /responses/:id`, cancel), and the output items of those
 * responses (what an `item_reference` input item names). All of it is the store's facade records
 * of the session (`FacadeRecordStore`), deleted with the session.
 */
import type { SessionStore } from "../../../store/types.js";
import type { OutputItem, ResponseObject } from "./responses-encoding.js";

/** Record kinds. */
const TOOL_CALL = "openai.tool_call";
const RESPONSE = "openai.response";
const ITEM = "openai.item";

export class OpenAIRecords {
	constructor(private readonly store: SessionStore) {}

	/**
	 * Records the client tool calls an answer returned (their results' request finds the session by
	 * them), and the response with its output items when there is one. Durable on resolve: the
	 * answer leaves the process only after it.
	 */
	async putAnswer(sessionId: string, callIds: readonly string[], response?: ResponseObject): Promise<void> {
		const records = callIds.map((id) => ({ kind: TOOL_CALL, key: id, data: "" }));
		if (response) {
			records.push({ kind: RESPONSE, key: response.id, data: JSON.stringify(response) });
			for (const item of response.output) records.push({ kind: ITEM, key: item.id, data: JSON.stringify(item) });
		}
		if (records.length > 0) await this.store.putFacadeRecords(sessionId, records, Date.now());
	}

	/** The response `id` of `sessionId`, as last stored. */
	async response(sessionId: string, id: string): Promise<ResponseObject | undefined> {
		const record = await this.store.getFacadeRecord(sessionId, RESPONSE, id);
		return record && (JSON.parse(record.data) as ResponseObject);
	}

	/** Sessions of `ownerId` whose answers returned the tool call `callId`, the latest first. */
	async sessionsOfCall(callId: string, ownerId: string | null): Promise<string[]> {
		return (await this.store.findFacadeRecords(TOOL_CALL, callId, ownerId)).map((r) => r.sessionId);
	}

	/** The output item `id` of one of `ownerId`'s responses. */
	async item(id: string, ownerId: string | null): Promise<OutputItem | undefined> {
		const [record] = await this.store.findFacadeRecords(ITEM, id, ownerId, 1);
		return record && (JSON.parse(record.data) as OutputItem);
	}
}
