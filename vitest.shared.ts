import { readFileSync } from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * A shell program file (`*.sh`) imported by a module loads as its text: what tsup's `.sh` loader
 * bundles into dist (tsup.config.ts), so tests run the same programs from src.
 */
const shellProgramText = {
  name: 'berth-shell-program-text',
  enforce: 'pre' as const,
  load(id: string) {
    const file = id.replace(/[?#].*$/, '');
    return file.endsWith('.sh') ? `export default ${JSON.stringify(readFileSync(file, 'utf8'))};` : undefined;
  },
};

/**
 * Shared vitest settings. Every run also writes a JSON report under `.test-results/`, which
 * `scripts/test.sh` sums into one closing line.
 */
export function berthVitestConfig(options: { name: string; kind: 'unit' | 'integration' | 'attack' | 'e2e'; timeoutMs?: number }) {
  const include =
    options.kind === 'unit' ? ['src/**/*.test.ts', 'test/**/*.test.ts'] : [`src/**/*.${options.kind}.test.ts`, `test/**/*.${options.kind}.test.ts`];
  const exclude =
    options.kind === 'unit'
      ? ['**/*.integration.test.ts', '**/*.attack.test.ts', '**/*.e2e.test.ts', '**/node_modules/**', '**/dist/**']
      : ['**/node_modules/**', '**/dist/**'];
  return defineConfig({
    plugins: [shellProgramText],
    test: {
      name: options.kind === 'unit' ? options.name : `${options.name}-${options.kind}`,
      include,
      exclude,
      testTimeout: options.timeoutMs ?? (options.kind === 'unit' ? 20_000 : 120_000),
      hookTimeout: options.timeoutMs ?? (options.kind === 'unit' ? 20_000 : 180_000),
      reporters: ['default', 'json'],
      outputFile: { json: path.resolve(import.meta.dirname, '.test-results', `${options.name}-${options.kind}.json`) },
      // Unit test files run three at a time (vitest's default is one fewer than the cores: one, on
      // two cores); many of them wait on real shells and files. Engine suites run one file at a time.
      ...(options.kind === 'unit' ? { maxWorkers: 3 } : { fileParallelism: false }),
    },
  });
}

/**
 * The time budget of a property test: its number of runs is fixed, and this budget holds them
 * on a two-core machine that is busy with other work (a build, another suite, `stress-ng --cpu 2`),
 * several times over what they take on an idle one.
 */
export const PROPERTY_TEST_TIMEOUT_MS = 120_000;
