import { defineConfig } from "vitest/config";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts"],
		testTimeout: 20_000,
		hookTimeout: 20_000,
		// Two cores here and in CI: server tests spawn processes; keep the pool small.
		maxWorkers: 2,
		// Tests talk to local fake providers on 127.0.0.1; a proxy configured on the machine running
		// them must not capture that traffic (provider requests honour these variables, src/ai/http.ts).
		// Empty counts as unset; test/ai/http.test.ts sets them itself.
		env: { HTTP_PROXY: "", http_proxy: "", HTTPS_PROXY: "", https_proxy: "", NO_PROXY: "", no_proxy: "" },
		// Type tests get their own program: their declaration merging (CustomAgentMessages) must not
		// leak into the main typecheck, and checking only them keeps this step quick.
		typecheck: { enabled: true, include: ["test/types/**/*.test-d.ts"], tsconfig: "test/types/tsconfig.json" },
	},
});
