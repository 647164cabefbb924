#!/usr/bin/env node
import module from 'node:module';
import { fileURLToPath } from 'node:url';
import type { CliIo } from './cli/cli-io.js';
import { loadZodInEnglishOnly } from './cli/english-zod.js';
import { isSocketExec } from './cli/parse-socket-exec-arguments.js';
import { MAX_SANDBOX_SOCKET_REQUEST_BYTES } from './socket/protocol.js';

function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => stream.write('', () => resolve()));
}

/** This process's stdin as text, read no further than a request could carry. */
function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => resolve(Buffer.concat(chunks).toString('utf8'));
    process.stdin.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      // One byte over the bound is enough for the client to refuse it with a clear message.
      if (size > MAX_SANDBOX_SOCKET_REQUEST_BYTES) {
        process.stdin.destroy();
        done();
      }
    });
    process.stdin.once('end', done);
    process.stdin.once('error', reject);
  });
}

/** The oldest Node.js the CLI runs on (the packages' `engines.node`). */
const MINIMUM_NODE_MAJOR = 22;
if (Number(process.versions.node.split('.')[0]) < MINIMUM_NODE_MAJOR) {
  process.stderr.write(
    `berth: needs Node.js ${MINIMUM_NODE_MAJOR} or newer, and ${process.execPath} is ${process.version}; ` +
      'install a newer Node.js (from a checkout: bash scripts/demo.sh brings one into .tools/)\n',
  );
  process.exit(125);
}

/*
 * V8's compiled code for the modules a command loads is kept beside the package (its own
 * node_modules/.cache), so the next `berth ls` skips compiling them again: about a tenth of its time.
 * Whoever may write there may already change this file; a shared temporary folder (Node's default)
 * would let another local user plant code. A folder that cannot be made leaves the cache off.
 */
module.enableCompileCache?.(fileURLToPath(new URL('../node_modules/.cache/berth-compile', import.meta.url)));

loadZodInEnglishOnly();

// A reader that went away (`berth ls | head -1`) is not an error of the command's.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

/**
 * SIGINT and SIGTERM go to the command that listens (it stops what it started and says so in one
 * line); a second one, or one while nothing listens, ends the process at once, as the default would.
 */
function onInterrupt(listener: (signal: 'SIGINT' | 'SIGTERM') => void): () => void {
  let seen = false;
  const handlers = (['SIGINT', 'SIGTERM'] as const).map((signal) => {
    const handler = (): void => {
      if (seen) {
        process.stderr.write(`berth: ${signal} again: leaving now; berth ls shows what may be left, berth rm removes it\n`);
        process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
      }
      seen = true;
      listener(signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
}

const argv = process.argv.slice(2);
// The process's environment stands for the gateway's: HERMES_USER_* variables, TERMINAL_SANDBOX_DIR, HERMES_HOME.
const io: CliIo = { stdout: process.stdout, stderr: process.stderr, environment: process.env, cwd: process.cwd(), onInterrupt };
// A host spawns `berth exec --socket` for every command: that path loads only the socket client,
// never @berth/core, the backends or dockerode, so it answers in tens of milliseconds.
const status = isSocketExec(argv)
  ? await (await import('./cli/socket-exec-command.js')).runSocketExecCommand(argv, io, readStdin)
  : await (await import('./cli/run-cli.js')).runCli(argv, io, readStdin);
process.exitCode = status;
// The command is over and every sandbox released; a socket or timer an engine client keeps open
// must not hold the terminal, so leave as soon as the output is written.
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(status);
