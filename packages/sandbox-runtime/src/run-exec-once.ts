import { randomBytes } from 'node:crypto';
import { TIMEOUT_EXIT_CODE } from '@berth/core';
import type { OpenExecChannel } from '@berth/core/driver';
import { createHeadTailBuffer } from './head-tail-buffer.js';
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
}): Promise<SessionRunResult> {
  const marker = `__BERTH_${randomBytes(12).toString('hex')}`;
  const channel = await options.openChannel(['/bin/sh', '-c', FALLBACK_PRELUDE, 'berth', FALLBACK_STATE_DIR, marker]);
  const stdout = createHeadTailBuffer(options.outputLimit);
  const stderr = createHeadTailBuffer(options.outputLimit);
  channel.onStdout((chunk) => stdout.write(chunk));
  channel.onStderr((chunk) => stderr.write(chunk));
  let timedOut = false;
  const closed = new Promise<void>((resolve) => channel.onClose(resolve));
  const timer = setTimeout(() => {
    timedOut = true;
    options.kill().catch(() => undefined);
  }, options.timeoutMs);
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
  const status = timedOut ? TIMEOUT_EXIT_CODE : ((await channel.exitCode().catch(() => undefined)) ?? 255);
  return { status, stdout, stderr, timedOut };
}
