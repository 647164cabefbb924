import path from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * Every package's unit tests in one vitest process (`scripts/test.sh`): one start-up and one
 * pool of workers for the machine, instead of a vitest per package competing for the cores.
 * Each package's own `vitest.config.ts` still runs alone with `pnpm --filter PACKAGE test`.
 */
export default defineConfig({
  test: {
    projects: ['packages/*/vitest.config.ts', 'apps/*/vitest.config.ts', 'examples/*/vitest.config.ts', 'tests/install/vitest.config.ts'],
    // vitest's default is one worker fewer than the cores: a single worker on two. Many unit
    // tests wait on real shells and files, so a third worker keeps both cores busy.
    maxWorkers: 3,
    reporters: ['default', 'json'],
    outputFile: { json: path.resolve(import.meta.dirname, '.test-results', 'unit.json') },
  },
});
