#!/usr/bin/env node
import { runCli } from './cli/run-cli.js';

function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write('', () => resolve()));
}

// A reader that went away (`berth ls | head -1`) is not an error of the command's.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

// The process's environment stands for the gateway's: HERMES_USER_* variables, TERMINAL_SANDBOX_DIR, HERMES_HOME.
const status = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, environment: process.env, cwd: process.cwd() });
process.exitCode = status;
// The command is over and every sandbox released; a socket or timer an engine client keeps open
// must not hold the terminal, so leave as soon as the output is written.
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(status);
