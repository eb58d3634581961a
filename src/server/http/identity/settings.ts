/**
 * The identity settings as the HTTP layer reads them (who may call, their tenants, client tokens,
 * admission): the object form of `auth` is parsed with the rest of the config, in
 * config/identity.ts, which every layer may read.
 */
export {
	hasJwtAuth,
	type IdentitySettings,
	type JwtSettings,
	resolveIdentitySettings,
} from "../../config/identity.js";
