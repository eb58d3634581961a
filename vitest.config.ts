import { defineConfig } from "vitest/config";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts"],
		testTimeout: 20_000,
		hookTimeout: 20_000,
		// Two cores here and in CI: server tests spawn processes; keep the pool small.
		maxWorkers: 2,
		// Type tests get their own program: their declaration merging (CustomAgentMessages) must not
		// leak into the main typecheck, and checking only them keeps this step quick.
		typecheck: { enabled: true, include: ["test/types/**/*.test-d.ts"], tsconfig: "test/types/tsconfig.json" },
	},
});
