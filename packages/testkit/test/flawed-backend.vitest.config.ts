import { defineConfig } from 'vitest/config';

/** Config of the child vitest that runs testBackend against the flawed backend. */
export default defineConfig({
  test: { include: ['test/flawed-backend.suite.ts'], testTimeout: 120_000, hookTimeout: 180_000 },
});
