import { defineConfig } from "vitest/config";

export default defineConfig({
	test: {
		include: ["test/**/*.test.ts"],
		testTimeout: 20_000,
		hookTimeout: 20_000,
		// Two cores here and in CI: server tests spawn processes; keep the pool small.
		maxWorkers: 2,
		typecheck: { enabled: true, include: ["test/types/**/*.test-d.ts"] },
	},
});
