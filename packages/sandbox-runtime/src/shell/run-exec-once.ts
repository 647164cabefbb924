import { randomBytes } from 'node:crypto';
import { INTERRUPTED_EXIT_CODE, TIMEOUT_EXIT_CODE } from '@berth/core';
import type { OpenExecChannel } from '@berth/core/driver';
import { createHeadTailBuffer, tapBuffer } from '../output/head-tail-buffer.js';
import type { SessionRunResult } from './shell-session.js';
import { buildFallbackInput, FALLBACK_PRELUDE } from './shell-protocol.js';

/** The state folder the fallback mode uses to carry directory and exports between commands. */
export const FALLBACK_STATE_DIR = '/tmp/.berth-exec';

/**
 * The fallback mode: one engine exec per command. The environment and the command travel on
 * stdin (read by a small prelude), so the exec's stored configuration holds neither a value
 * nor the command's input; the rest of stdin is the command's input, then end of file.
 */
export async function runExecOnce(options: {
  openChannel: OpenExecChannel;
  command: string;
  cwd?: string;
  stdin?: Uint8Array;
  variables: Readonly<Record<string, string>>;
  /** Whether the environment changed since the sandbox's previous command. */
  environmentChanged: boolean;
  timeoutMs: number;
  outputLimit: number;
  kill: () => Promise<void>;
  signal?: AbortSignal;
  onStdout?: (chunk: Uint8Array) => void;
  onStderr?: (chunk: Uint8Array) => void;
}): Promise<SessionRunResult> {
  const marker = `__BERTH_${randomBytes(12).toString('hex')}`;
  const channel = await options.openChannel(['/bin/sh', '-c', FALLBACK_PRELUDE, 'berth', FALLBACK_STATE_DIR, marker]);
  const stdout = tapBuffer(createHeadTailBuffer(options.outputLimit), options.onStdout);
  const stderr = tapBuffer(createHeadTailBuffer(options.outputLimit), options.onStderr);
  channel.onStdout((chunk) => stdout.write(chunk));
  channel.onStderr((chunk) => stderr.write(chunk));
  let timedOut = false;
  let interrupted = false;
  const closed = new Promise<void>((resolve) => channel.onClose(resolve));
  const stop = (reason: 'timeout' | 'abort'): void => {
    if (timedOut || interrupted) return;
    if (reason === 'timeout') timedOut = true;
    else interrupted = true;
    options.kill().catch(() => undefined);
  };
  const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
  const onAbort = (): void => stop('abort');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  channel.write(
    buildFallbackInput({
      marker,
      command: options.command,
      variables: options.variables,
      changed: options.environmentChanged,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    }),
  );
  if (options.stdin && options.stdin.length > 0) channel.write(options.stdin);
  channel.end();
  await closed;
  clearTimeout(timer);
  options.signal?.removeEventListener('abort', onAbort);
  const status = timedOut ? TIMEOUT_EXIT_CODE : interrupted ? INTERRUPTED_EXIT_CODE : ((await channel.exitCode().catch(() => undefined)) ?? 255);
  return { status, stdout, stderr, timedOut };
}
