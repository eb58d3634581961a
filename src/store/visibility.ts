/**
 * The visibility rule: which sessions a caller may see. One function, used by the server for every
 * lookup of a session by id (`SessionManager.load`) and by the memory store's listing; the SQL
 * stores' listing queries say the same thing in SQL (`owner_id IS $owner OR (visibility = 'tenant'
 * AND tenant = $tenant)`).
 *
 * A caller is an owner id and that owner's tenant. A session is visible to it when:
 * 1. the caller is `null` (auth off: one owner, the server itself), or
 * 2. the caller owns it, or
 * 3. it is shared with its tenant (`visibility: "tenant"`), its tenant is not `null`, and the
 *    caller belongs to that same tenant.
 * Nothing else sees it; what a caller may not see is answered as if it did not exist (404).
 */
import type { SessionVisibility } from "./records.js";

/** Who is asking: `null` when auth is off. */
export interface Caller {
	ownerId: string;
	tenant: string | null;
}

/** What the rule reads of a session. */
export interface Owned {
	ownerId: string | null;
	tenant: string | null;
	visibility: SessionVisibility;
}

/** True when `caller` may see `session` (see the module comment). */
export function canSee(caller: Caller | null, session: Owned): boolean {
	if (caller === null) return true;
	if (session.ownerId === caller.ownerId) return true;
	return session.visibility === "tenant" && session.tenant !== null && session.tenant === caller.tenant;
}
