import path from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * Shared vitest settings. Every run also writes a JSON report under `.test-results/`, which
 * `scripts/test.sh` sums into one closing line.
 */
export function berthVitestConfig(options: { name: string; kind: 'unit' | 'integration' | 'attack' | 'e2e'; timeoutMs?: number }) {
  const include =
    options.kind === 'unit' ? ['src/**/*.test.ts', 'test/**/*.test.ts'] : [`src/**/*.${options.kind}.test.ts`, `test/**/*.${options.kind}.test.ts`];
  const exclude = options.kind === 'unit' ? ['**/*.integration.test.ts', '**/*.attack.test.ts', '**/*.e2e.test.ts', '**/node_modules/**', '**/dist/**'] : ['**/node_modules/**', '**/dist/**'];
  return defineConfig({
    test: {
      include,
      exclude,
      testTimeout: options.timeoutMs ?? (options.kind === 'unit' ? 20_000 : 120_000),
      hookTimeout: options.timeoutMs ?? (options.kind === 'unit' ? 20_000 : 180_000),
      reporters: ['default', 'json'],
      outputFile: { json: path.resolve(import.meta.dirname, '.test-results', `${options.name}-${options.kind}.json`) },
      ...(options.kind === 'unit' ? {} : { fileParallelism: false }),
    },
  });
}
