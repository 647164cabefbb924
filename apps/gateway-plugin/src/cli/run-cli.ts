import { createRequire } from 'node:module';
import { BERTH_FAILURE_EXIT_CODE, isBerthError } from '@berth/core';
import type { CliIo } from './cli-io.js';
import { COMMAND_HELP, MAIN_HELP } from './help-text.js';
import { parseCliArguments } from './parse-cli-arguments.js';
import { isSocketExec } from './parse-socket-exec-arguments.js';
import { runSocketExecCommand } from './socket-exec-command.js';

/** The exit status of every error of Berth's own, as `docker run` uses it. */
export const BERTH_ERROR_EXIT = BERTH_FAILURE_EXIT_CODE;

/** One line, whatever the error carried. */
export function errorLine(error: unknown): string {
  const message = isBerthError(error) ? error.message : `unexpected error: ${error instanceof Error ? error.message : String(error)}`;
  return `berth: ${message.replace(/\s*[\r\n]+\s*/g, ' ').trim()}\n`;
}

function packageVersion(): string {
  try {
    return (createRequire(import.meta.url)('../package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/**
 * Runs `berth` with `argv` (without `node` and the script) and returns the exit status.
 * `readStdin` gives `exec --socket --stdin` the process's input.
 */
export async function runCli(argv: readonly string[], io: CliIo, readStdin?: () => Promise<string>): Promise<number> {
  if (isSocketExec(argv)) return runSocketExecCommand(argv, io, readStdin);
  try {
    const parsed = parseCliArguments(argv);
    if (parsed.kind === 'help') {
      io.stdout.write(parsed.command ? COMMAND_HELP[parsed.command] : MAIN_HELP);
      return 0;
    }
    if (parsed.kind === 'version') {
      io.stdout.write(`${packageVersion()}\n`);
      return 0;
    }
    // Each command loads what it needs, when it runs: `berth env` no engine client, `--version` nothing.
    switch (parsed.command) {
      case 'exec':
        return await (await import('./exec-command.js')).runExecCommand(io, parsed.options, parsed.commandWords);
      case 'ls':
        return await (await import('./ls-command.js')).runLsCommand(io, parsed.options);
      case 'rm':
        return await (await import('./rm-command.js')).runRmCommand(io, parsed.options);
      case 'env':
        return await (await import('./env-command.js')).runEnvCommand(io, parsed.options);
      case 'doctor':
        return await (await import('./doctor-command.js')).runDoctorCommand(io, parsed.options);
      case 'demo':
        return await (await import('./demo-command.js')).runDemoCommand(io, parsed.options);
      case 'serve':
        return await (await import('./serve-command.js')).runServeCommand(io, parsed.options);
      case 'top':
        return await (await import('./top-command.js')).runTopCommand(io, parsed.options);
    }
  } catch (error) {
    io.stderr.write(errorLine(error));
    return BERTH_ERROR_EXIT;
  }
}
