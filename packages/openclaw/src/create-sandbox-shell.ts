import { isUtf8 } from 'node:buffer';
import type { SessionContext } from '@berth/core';
import { type Berth, helperScriptCommand, SANDBOX_LAYOUT } from '@berth/gateway-plugin';

/** What one script produced in the sandbox; stdout and stderr already masked like any command's. */
export interface SandboxScriptResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  /** True when the output was cut to `docker_output_limit`. */
  readonly truncated: boolean;
}

/** Runs the plugin's own scripts (file operations, OpenClaw's probes) in one session's sandbox. */
export interface SandboxShell {
  /**
   * Runs `script` as `sh -c script berth-openclaw ARGS…` in the session's sandbox, through its
   * warm shell session, with `stdin` (bytes that are not UTF-8 travel base64-encoded and are
   * decoded inside the sandbox). The session's `cd` and `export` are not changed.
   */
  run(
    script: string,
    options?: { readonly args?: readonly string[]; readonly stdin?: Buffer | string; readonly signal?: AbortSignal },
  ): Promise<SandboxScriptResult>;
  /** The most output bytes a script may print per stream (`docker_output_limit`). */
  readonly outputLimit: number;
}

/** Options of {@link createSandboxShell}. */
export interface CreateSandboxShellOptions {
  readonly berth: Berth;
  /** The session whose sandbox the scripts run in; resolved by core for every script. */
  readonly session: SessionContext;
  /** Seconds per script. @default terminal.timeout */
  readonly timeout?: number;
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : Object.assign(new Error('the sandbox operation was aborted'), { name: 'AbortError' });
}

/** A {@link SandboxShell} over a Berth, for one session. */
export function createSandboxShell(options: CreateSandboxShellOptions): SandboxShell {
  const { berth, session } = options;
  return {
    async run(script, runOptions = {}) {
      const { signal } = runOptions;
      if (signal?.aborted) throw abortError(signal);
      // Resolved for every script, like every command: the scope is core's decision, never cached here.
      const request = berth.request({ session });
      let stdin: string | undefined;
      let decodeStdin = false;
      const input = runOptions.stdin;
      if (typeof input === 'string') stdin = input;
      else if (input !== undefined && isUtf8(input)) stdin = input.toString('utf8');
      else if (input !== undefined) {
        stdin = input.toString('base64');
        decodeStdin = true;
      }
      // The image's own /bin/sh and tools, not what the user's PATH or preload would give (docs/security.md).
      const command = helperScriptCommand(script, 'berth-openclaw', runOptions.args ?? [], { decodeStdin });
      const running = berth.executeRequest(request, command, {
        cwd: SANDBOX_LAYOUT.workspace,
        ...(stdin !== undefined ? { stdin } : {}),
        ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      });
      const result = signal
        ? await new Promise<Awaited<typeof running>>((resolve, reject) => {
            // The script itself runs on to its end: a file operation is short, and the
            // session's queue keeps later commands after it.
            const onAbort = (): void => reject(abortError(signal));
            signal.addEventListener('abort', onAbort, { once: true });
            running.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
          })
        : await running;
      return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr, timedOut: result.timedOut, truncated: result.truncated };
    },
    outputLimit: berth.config.docker_output_limit,
  };
}
