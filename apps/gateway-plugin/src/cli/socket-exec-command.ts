import { BERTH_FAILURE_EXIT_CODE, INTERRUPTED_EXIT_CODE } from '@berth/core/request-protocol';
import { takeRequestFile } from '../socket/request-file.js';
import { requestSandboxExec } from '../socket/request-sandbox-exec.js';
import type { SandboxSocketRequest } from '../socket/protocol.js';
import type { CliIo } from './cli-io.js';
import { parseSocketExecArguments } from './parse-socket-exec-arguments.js';

/** The request in a request file; the server checks it (this client loads neither zod nor core). */
function requestFromFile(file: string): SandboxSocketRequest {
  let request: unknown;
  try {
    request = JSON.parse(takeRequestFile(file));
  } catch (error) {
    if (error instanceof SyntaxError) throw new Error(`the request file ${file} does not hold a JSON request; build the argv with sandboxCommandArgv`);
    throw error;
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    throw new Error(`the request file ${file} does not hold a request object; build the argv with sandboxCommandArgv`);
  // This client reads a JSON answer, whatever the file asked for.
  const { reply: _reply, ...rest } = request as SandboxSocketRequest;
  return rest;
}

/**
 * `berth exec --socket PATH …`: the thin client of `berth serve`. Sends one request, writes the
 * command's stdout and stderr to its own and returns its exit status (124 after a timeout);
 * any error of Berth's own is one line on stderr and 125. Loads neither the backend nor core (only core's request protocol, bundled in).
 */
export async function runSocketExecCommand(argv: readonly string[], io: CliIo, readStdin?: () => Promise<string>): Promise<number> {
  try {
    const parsed = parseSocketExecArguments(argv);
    const { socket, forwardStdin } = parsed;
    // A request file is read and deleted first, whatever happens next: it is read once.
    const request = parsed.request !== undefined ? parsed.request : requestFromFile(parsed.requestFile);
    const stdin = forwardStdin && readStdin ? await readStdin() : undefined;
    // Ctrl-C (or SIGTERM) leaves without the answer: the process ends, its connection closes, and
    // berth serve stops the command of a client that left (serve-sandboxes.ts).
    let unlisten: (() => void) | undefined;
    const interrupted = new Promise<string>((resolve) => {
      unlisten = io.onInterrupt?.(resolve);
    });
    // This client never ends its side before the answer: the end of it means it left (stopOnLeave).
    const sent = { ...request, stopOnLeave: true, ...(stdin !== undefined ? { stdin } : {}) };
    const result = await Promise.race([requestSandboxExec(socket, sent), interrupted]).finally(() => unlisten?.());
    if (typeof result === 'string') {
      io.stderr.write(`berth: interrupted (${result}); berth serve stops the command as this client leaves\n`);
      return INTERRUPTED_EXIT_CODE;
    }
    io.stdout.write(result.stdout);
    io.stderr.write(result.stderr);
    if (result.timedOut) io.stderr.write(`berth: the command was killed at its timeout${request.timeout !== undefined ? ` of ${request.timeout} s` : ''}\n`);
    return Number.isInteger(result.exitCode) && result.exitCode >= 0 && result.exitCode <= 255 ? result.exitCode : 1;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`berth: ${message.replace(/\s*[\r\n]+\s*/g, ' ').trim()}\n`);
    return BERTH_FAILURE_EXIT_CODE;
  }
}
