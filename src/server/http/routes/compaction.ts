/**
 * `POST /v1/sessions/:id/compact`: compacts an idle session's context now, and answers when done
 * (200 with the compaction), so a client sees the result without reading the stream. The stream
 * carries `compaction_start` / `compaction_end` as for an automatic compaction.
 *
 * A compaction the client aborted (`POST .../abort` while it ran) is the client's doing, not a
 * failure of the server or the provider: 409 `COMPACTION_ABORTED`, logged at info. A summary call
 * that failed on its own is 502 `COMPACTION_FAILED`.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { CompactionExtension } from "../../runtime/compaction/extension.js";
import { apiError } from "../errors.js";
import { routePlugin } from "../plugins.js";
import { AgentMessageSchema, responses, SessionParams } from "../schemas.js";

export const CompactBody = Type.Object(
	{
		instructions: Type.Optional(
			Type.String({
				maxLength: 20_000,
				description: "What the summary should focus on or keep, added to the summary request.",
			}),
		),
		keepRecentTokens: Type.Optional(
			Type.Integer({
				minimum: 0,
				maximum: 100_000_000,
				description:
					"Tokens of recent messages to keep verbatim this time (default: the session's setting). 0 keeps only the latest turn.",
			}),
		),
	},
	{ additionalProperties: false },
);

export const CompactResult = Type.Object(
	{
		compacted: Type.Literal(true),
		messageIndex: Type.Integer({ description: "Index of the compaction message in the transcript." }),
		tokensBefore: Type.Integer({ description: "Estimated tokens of the context before." }),
		tokensAfter: Type.Integer({
			description: "Estimated tokens of the context after: the summary and the kept messages.",
		}),
		message: AgentMessageSchema,
	},
	{ description: "The compaction is done and stored; the next model call sees the summary and the kept messages." },
);

export const compactionRoutes: FastifyPluginAsyncTypebox<{ compaction: CompactionExtension }> = routePlugin(
	"wheelhouse-compaction",
	async (app, opts) => {
		app.post(
			"/v1/sessions/:id/compact",
			{
				schema: {
					tags: ["runs"],
					summary:
						"Compact the session's context now: summarise the older messages with the session's model, keep the recent ones (409 while a run is active)",
					params: SessionParams,
					body: CompactBody,
					response: responses({ 200: CompactResult }),
				},
			},
			async function compact(request) {
				// A run on another replica: refused as here, without building the session first.
				const port = await app.wheelhouse.sessions.open(request.params.id, request.ownerId);
				if (port.where === "remote" && port.record.status === "running") {
					throw apiError("AGENT_BUSY", `Session ${port.id} is running; compact it once the run ended (agent_end).`);
				}
				const session = await app.wheelhouse.sessions.load(request.params.id, request.ownerId);
				const controller = opts.compaction.of(session);
				if (!controller) throw new Error(`session ${session.id} has no compaction controller`);
				const { instructions, keepRecentTokens } = request.body ?? {};
				if (session.isBusy) {
					throw apiError("AGENT_BUSY", `Session ${session.id} is running; compact it once the run ended (agent_end).`);
				}
				if (!controller.canCompact(keepRecentTokens)) {
					throw apiError(
						"NOTHING_TO_COMPACT",
						`Every message of session ${session.id} is within the recent messages kept verbatim; there is nothing older to summarise (a smaller keepRecentTokens keeps less).`,
					);
				}
				const result = await controller.compactNow(instructions || undefined, keepRecentTokens);
				if (result.kind === "nothing") {
					throw apiError("NOTHING_TO_COMPACT", `Session ${session.id} has nothing older to summarise.`);
				}
				if (result.kind === "failed" && result.aborted) {
					request.log.info({ sessionId: session.id }, "manual compaction aborted by the client");
					throw apiError(
						"COMPACTION_ABORTED",
						`The compaction of session ${session.id} was aborted before its summary was written (POST .../abort). The session is unchanged.`,
					);
				}
				if (result.kind === "failed") {
					throw apiError(
						"COMPACTION_FAILED",
						`The summary call failed: ${result.errorMessage}. The session is unchanged.`,
					);
				}
				return {
					compacted: true as const,
					messageIndex: result.messageIndex,
					tokensBefore: result.message.tokensBefore,
					tokensAfter: result.message.tokensAfter,
					message: result.message as unknown as { role: string },
				};
			},
		);
	},
);
