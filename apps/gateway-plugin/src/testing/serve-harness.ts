import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, vi } from 'vitest';
import { TEST_IMAGE } from './cli-harness.js';
import { findEngine } from './find-engine.js';
import { removeTestRoot } from './remove-test-root.js';
import { BERTH_CLI } from './run-berth-cli.js';

/** What one spawned client did. */
export interface ClientRun {
  status: number;
  stdout: string;
  stderr: string;
}

/** A `berth serve` subprocess, with what it has printed so far. */
export interface ServeProcess {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
}

/** The session key of a Telegram user's direct chat. */
export const keyOf = (user: string): string => `agent:main:telegram:direct:${user}`;

/** Spawns the argv as a host would (an empty environment), keeping stdout and stderr as bytes. */
export function spawnArgv(argv: readonly string[], input?: Buffer): Promise<{ status: number; stdout: Buffer; stderr: Buffer }> {
  return new Promise((resolve) => {
    const child = execFile(argv[0]!, argv.slice(1), { env: {}, encoding: 'buffer', timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
    // A client that exits before reading its stdin (no server at the path, say) closes the pipe:
    // that is its answer, not the test's error.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input ?? Buffer.alloc(0));
  });
}

/**
 * `berth serve` and spawned `berth exec --socket` clients as a host runs them: the built
 * dist/cli.js in subprocesses, against the real engine. A folder of the test file's own with a
 * Hermes home (the test image, a 60 s timeout) and two users with tokens of their own; before the
 * file's tests, a server on `socket`, in a folder that does not exist yet (berth serve must create
 * it with mode 0700); after them, the server stopped and the folder removed with what it holds.
 * `config` adds lines under `terminal:` (two spaces in, as `docker_file_limit: 2`), `environment`
 * variables to the gateway's, `serve` arguments to the file's server (`--metrics :0`).
 */
export function useServeHarness(
  options: { readonly config?: readonly string[]; readonly environment?: Readonly<Record<string, string>>; readonly serve?: readonly string[] } = {},
) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-sock-it-'));
  const home = path.join(root, 'hermes');
  const sandboxes = path.join(root, 'sandboxes');
  const socket = path.join(root, 'run', 'berth.sock');
  const engine = findEngine('docker');
  const uid = () => String(randomInt(100_000_000, 2_000_000_000));
  const alice = uid();
  const bob = uid();
  const tokens = { alice: `ghp_alice_${uid()}`, bob: `ghp_bob_${uid()}` };
  vi.setConfig({ testTimeout: 300_000 });

  const environment: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: root,
    HERMES_HOME: home,
    TERMINAL_SANDBOX_DIR: sandboxes,
    [`HERMES_USER_TELEGRAM_${alice}_GITHUB_TOKEN`]: tokens.alice,
    [`HERMES_USER_TELEGRAM_${bob}_GITHUB_TOKEN`]: tokens.bob,
    ...options.environment,
  };

  /** Spawns `node dist/cli.js …args` with only the socket in common with the server. */
  function berth(args: string[], input?: string): Promise<ClientRun> {
    return new Promise((resolve) => {
      // The client gets none of the gateway's variables: everything comes from the server.
      const child = execFile(
        process.execPath,
        [BERTH_CLI, ...args],
        { env: { PATH: environment.PATH! }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => {
          resolve({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
        },
      );
      child.stdin?.on('error', () => undefined);
      if (input !== undefined) child.stdin?.end(input);
    });
  }

  const exec = (sessionKey: string, command: string, extra: string[] = []) =>
    berth(['exec', '--socket', socket, '--session-key', sessionKey, ...extra, '--', command]);

  function startServer(socketPath: string, extra: readonly string[] = []): Promise<ServeProcess> {
    const child = spawn(process.execPath, [BERTH_CLI, 'serve', '--socket', socketPath, ...extra], { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
    const server: ServeProcess = { child, stdout: '', stderr: '', exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
    child.stderr!.on('data', (chunk: Buffer) => (server.stderr += chunk.toString()));
    return new Promise((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        server.stdout += chunk.toString();
        if (server.stdout.includes('listening on')) resolve(server);
      });
      void server.exited.then((code) => reject(new Error(`berth serve exited ${code} before listening: ${server.stderr.trim()}`)));
    });
  }

  let server: ServeProcess | undefined;

  beforeAll(async () => {
    if (!existsSync(BERTH_CLI)) throw new Error(`${BERTH_CLI} is missing; run "pnpm --filter @berth/gateway-plugin build" first`);
    mkdirSync(home, { recursive: true });
    const lines = [`docker_image: ${TEST_IMAGE}`, 'timeout: 60', ...(options.config ?? [])];
    writeFileSync(path.join(home, 'config.yaml'), `terminal:\n${lines.map((line) => `  ${line}\n`).join('')}`);
    server = await startServer(socket, options.serve);
  });

  afterAll(async () => {
    if (server?.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    await removeTestRoot(engine, root);
  });

  /** What the file's server has written to stderr so far (its log). */
  const serverLog = (): string => server?.stderr ?? '';
  /** What the file's server has written to stdout so far (its ready line). */
  const serverOutput = (): string => server?.stdout ?? '';

  return { root, home, sandboxes, socket, alice, bob, tokens, environment, berth, exec, startServer, serverLog, serverOutput };
}
