/**
 * src/client/api-types.ts is what scripts/gen-client-types.ts renders from the committed
 * openapi.yaml: after `npm run openapi` changes the document, the client's types must be
 * regenerated (`npx tsx scripts/gen-client-types.ts`) or this fails.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { API_TYPES_FILE, renderApiTypes } from "../../scripts/gen-client-types.js";

it("the committed client API types match openapi.yaml", async () => {
	const rendered = await renderApiTypes();
	expect(rendered).toContain("postSessionsByIdPrompt");
	expect(readFileSync(API_TYPES_FILE, "utf8") === rendered, "regenerate: npx tsx scripts/gen-client-types.ts").toBe(
		true,
	);
}, 60_000);
