import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The CLI as a user runs it: the built dist/cli.js. */
export const BERTH_CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** What one run of the CLI did. */
export interface BerthRun {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The CLI process's pid (what it labels things it makes with, among others). */
  readonly pid: number | undefined;
}

/** Runs `berth args` in a subprocess with exactly `environment` (plus PATH), as an operator would. */
export function runBerthCli(
  args: readonly string[],
  environment: Readonly<Record<string, string>>,
  options: { cwd?: string; input?: string } = {},
): Promise<BerthRun> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BERTH_CLI, ...args],
      { env: { PATH: process.env.PATH ?? '', ...environment }, timeout: 280_000, maxBuffer: 16 * 1024 * 1024, ...(options.cwd ? { cwd: options.cwd } : {}) },
      (error, stdout, stderr) => {
        const status = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ status, stdout, stderr, pid: child.pid });
      },
    );
    child.stdin?.end(options.input ?? '');
  });
}
