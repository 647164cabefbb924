import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDocker } from '../test/create-flawed-docker-backend.js';

/*
 * testBackend must fail backends that get things wrong. These tests run the suite in a child
 * vitest against a deliberately flawed Docker backend (docker CLI, one exec per command) and
 * check that the tests aimed at each flaw fail, and that the same tests pass with the flaws off.
 */

const packageRoot = path.resolve(import.meta.dirname, '..');
const vitestBin = path.join(path.dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
const network = `berth-testkit-flawed-${randomBytes(4).toString('hex')}`;

/** The tests each switchable flaw must make fail. */
const TARGETED = {
  capabilities: 'holds only the configured capabilities',
  'env-in-config': "the engine's record of the container holds none",
  'shared-network': "a user cannot connect to a listener in another user's sandbox",
  'no-mask': 'masks secret values in stdout and stderr by default',
  'naive-purge': 'purge deletes the scope',
  'readable-names': 'sandbox names and hostnames say nothing about whose sandbox it is',
  'no-default-timeout': 'kills a command that gives no timeout at terminal.timeout',
} as const;

/** Flaws the flawed backend always has, and the tests that catch them. */
const INHERENT = ['kills the children and grandchildren of a timed-out command', 'masks secrets that straddle read-chunk boundaries'];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function runSuite(flaws: readonly string[], titles: readonly string[]): Promise<Map<string, string>> {
  const folder = await mkdtemp(path.join(tmpdir(), 'berth-testkit-report-'));
  const report = path.join(folder, 'report.json');
  try {
    const pattern = titles.map(escapeRegExp).join('|');
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [vitestBin, 'run', '--config', 'test/flawed-backend.vitest.config.ts', '-t', pattern, '--reporter=json', `--outputFile=${report}`],
        {
          cwd: packageRoot,
          env: { ...process.env, BERTH_TESTKIT_FLAWS: flaws.join(','), BERTH_TESTKIT_FLAWED_NETWORK: network },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      // Vitest exits 1 when tests fail, which is what some of these runs are for; the report decides.
      child.on('close', (code) => (code === 0 || code === 1 ? resolve() : reject(new Error(`child vitest exited ${code}: ${stderr.slice(-2000)}`))));
    });
    const parsed = JSON.parse(await readFile(report, 'utf8')) as { testResults: Array<{ assertionResults: Array<{ title: string; status: string }> }> };
    return new Map(parsed.testResults.flatMap((file) => file.assertionResults.map((result) => [result.title, result.status] as const)));
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

const statusOf = (results: Map<string, string>, title: string): string | undefined => [...results].find(([name]) => name.startsWith(title))?.[1];

describe('testBackend fails flawed backends', () => {
  afterAll(async () => {
    await runDocker(['network', 'rm', network]);
  });

  it('the tests aimed at each flaw pass against the backend without its flaws', { timeout: 240_000 }, async () => {
    const results = await runSuite([], Object.values(TARGETED));
    for (const title of Object.values(TARGETED)) expect(statusOf(results, title), title).toBe('passed');
  });

  it('each flaw makes its test fail, and the inherent flaws theirs', { timeout: 240_000 }, async () => {
    const results = await runSuite(Object.keys(TARGETED), [...Object.values(TARGETED), ...INHERENT]);
    for (const title of [...Object.values(TARGETED), ...INHERENT]) expect(statusOf(results, title), title).toBe('failed');
  });
});
