import type net from 'node:net';
import { isBerthError, type SandboxRequest } from '@berth/core';
import type { Berth } from '../create-berth.js';
import { getSandboxFile, putHostFile } from '../files/host-files.js';
import {
  encodeFramedResult,
  SANDBOX_SOCKET_PROTOCOL_VERSION,
  type SandboxSocketAnyRequest,
  type SandboxSocketErrorResponse,
  type SandboxSocketResponse,
} from './protocol.js';
import { oneLine } from './socket-path.js';

/** The answer of an error: a Berth error's code and message, anything else `INTERNAL`. */
export function errorResponse(error: unknown): SandboxSocketErrorResponse {
  const code = isBerthError(error) ? error.code : 'INTERNAL';
  const message = isBerthError(error) ? error.message : `unexpected error: ${error instanceof Error ? error.message : String(error)}`;
  return { v: SANDBOX_SOCKET_PROTOCOL_VERSION, error: { code, message: oneLine(message) } };
}

/** Writes `response` and closes the connection; a connection already gone gets nothing. */
export function answer(connection: net.Socket, response: SandboxSocketResponse, framed = false): void {
  if (connection.destroyed) return;
  // Closed once written: the request line's bytes after a refusal are not read.
  const bytes = framed && 'exitCode' in response ? encodeFramedResult(response) : `${JSON.stringify(response)}\n`;
  connection.end(bytes, () => connection.destroy());
}

/**
 * Runs one admitted request of `berth serve` (a command, or a file moved either way) and answers
 * it on its connection; what it throws is answered as `refusal` says.
 */
export async function runSocketRequest(
  berth: Berth,
  connection: net.Socket,
  request: SandboxSocketAnyRequest,
  sandboxRequest: SandboxRequest,
  refusal: (error: unknown) => SandboxSocketErrorResponse,
): Promise<void> {
  let response: SandboxSocketResponse;
  // A client that leaves (its host gave up, an operator pressed Ctrl-C) stops what it asked
  // for: its command is killed as at its timeout, a file's reading ends; nothing runs for no one.
  const left = new AbortController();
  connection.once('close', () => left.abort());
  if (request.stopOnLeave) connection.once('end', () => left.abort());
  try {
    if (request.op === 'put-file' || request.op === 'get-file') {
      const moved =
        request.op === 'put-file'
          ? await putHostFile(berth, sandboxRequest, request.source, request.path)
          : await getSandboxFile(berth, sandboxRequest, request.path, request.target, { signal: left.signal });
      answer(connection, { v: SANDBOX_SOCKET_PROTOCOL_VERSION, ...moved, scope: sandboxRequest.scope.key });
      return;
    }
    const result = await berth.executeRequest(sandboxRequest, request.command, {
      ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
      ...(request.timeout !== undefined ? { timeout: request.timeout } : {}),
      ...(request.stdin !== undefined ? { stdin: request.stdin } : {}),
      signal: left.signal,
    });
    response = {
      v: SANDBOX_SOCKET_PROTOCOL_VERSION,
      exitCode: result.exitCode,
      stdout: result.stdout,
      stderr: result.stderr,
      timedOut: result.timedOut,
      truncated: result.truncated,
      durationMs: result.durationMs,
      scope: sandboxRequest.scope.key,
    };
  } catch (error) {
    response = refusal(error);
  }
  answer(connection, response, request.op !== 'put-file' && request.op !== 'get-file' && request.reply === 'framed');
}
