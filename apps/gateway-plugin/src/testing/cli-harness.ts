import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, vi } from 'vitest';
import { requestEngine } from './engine-client.js';
import { findEngine } from './find-engine.js';
import { containersUnder, removeTestRoot } from './remove-test-root.js';
import { BERTH_CLI } from './run-berth-cli.js';

/** The image the CLI and serve tests' configs name (scripts/engines.sh builds it). */
export const TEST_IMAGE = 'localhost/berth-busybox:latest';

/** A Telegram-like user id of this run only. */
export const uid = (): string => String(randomInt(100_000_000, 2_000_000_000));

/** What one `berth` run did. */
export interface CliRun {
  status: number;
  stdout: string;
  stderr: string;
}

/** A run that must succeed; what berth said on stderr is the failure's message. */
export function expectSuccess(run: CliRun): void {
  expect(run.status, `berth exited ${run.status}: ${run.stderr}`).toBe(0);
}

/**
 * The CLI as a user runs it: the built dist/cli.js in a subprocess, against the real engine, with
 * a Hermes home of the test file's own whose config names the test image, forwards SHARED_NOTICE
 * and sets a 60 s timeout. Registers the file's set-up and its clean-up: the containers mounted
 * from its folder (killed first, then removed with their networks), its disks, the folder.
 */
export function useCliHarness() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-cli-it-'));
  const home = path.join(root, 'hermes');
  const sandboxes = path.join(root, 'sandboxes');
  const engine = findEngine('docker');
  // A first container on a busy shared engine can take minutes; each test makes a few.
  vi.setConfig({ testTimeout: 600_000 });

  beforeAll(() => {
    if (!existsSync(BERTH_CLI)) throw new Error(`${BERTH_CLI} is missing; run "pnpm --filter @berth/gateway-plugin build" first`);
    mkdirSync(home, { recursive: true });
    writeFileSync(path.join(home, 'config.yaml'), `terminal:\n  docker_image: ${TEST_IMAGE}\n  docker_forward_env: [SHARED_NOTICE]\n  timeout: 60\n`);
  });

  afterAll(async () => {
    // Whatever a failed test left: the containers mounted from this test's folders.
    for (const container of await containersUnder(engine, root)) await requestEngine(engine, 'POST', `/containers/${container.Id}/kill`).catch(() => {});
    await removeTestRoot(engine, root);
  });

  /** Runs `berth args` with the file's home and sandboxes; `extra` adds variables, or drops those set to `undefined`. */
  function berth(args: string[], extra: Record<string, string | undefined> = {}, cwd?: string): Promise<CliRun> {
    const environment: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: home, TERMINAL_SANDBOX_DIR: sandboxes };
    for (const [key, value] of Object.entries(extra)) {
      if (value === undefined) delete environment[key];
      else environment[key] = value;
    }
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [BERTH_CLI, ...args],
        { env: environment, timeout: 280_000, maxBuffer: 16 * 1024 * 1024, ...(cwd ? { cwd } : {}) },
        (error, stdout, stderr) => {
          const status = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
          resolve({ status, stdout, stderr });
        },
      );
    });
  }

  /** Writes a config file named `name` in the file's folder; returns its path. */
  function writeConfig(name: string, text: string): string {
    const file = path.join(root, name);
    writeFileSync(file, text);
    return file;
  }

  return {
    root,
    home,
    sandboxes,
    berth,
    writeConfig,
    /** Containers whose mounts lie under `folder`: what a test made, whoever else uses the engine. */
    containersUnder: (folder: string) => containersUnder(engine, folder),
  };
}
