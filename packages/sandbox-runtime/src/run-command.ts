import { hasInstallationKey, sandboxName, SandboxError, type ExecRequest, type ExecResult, type SandboxRequest } from '@berth/core';
import { maskOutput } from './mask-output.js';
import { codeOf, type RuntimeContext } from './runtime-context.js';
import type { SandboxEntry } from './sandbox-entry.js';
import type { ShellSessions } from './shell-sessions.js';
import { SessionClosedError, type SessionRunResult } from './shell-session.js';

/** The sandbox name of a request: core's opaque name, under the runtime's prefix. */
export function nameOf(context: RuntimeContext, request: SandboxRequest): string {
  return sandboxName({ root: request.paths.root, scopeKey: request.scope.key, prefix: context.namePrefix });
}

/**
 * Runs one command in its sandbox: names the sandbox, gets it ready, runs the command, retries
 * once when the sandbox or its shell was gone before the command started (it cannot have run),
 * and masks the scope's secrets in what comes back — the one place Berth masks.
 */
export function createCommandRunner(context: RuntimeContext, shells: ShellSessions): (entry: SandboxEntry, request: SandboxRequest, exec: ExecRequest) => Promise<ExecResult> {
  const { settings, logger } = context;

  // A new installation's key is made only once the engine has answered: a command that fails for
  // want of an engine leaves the sandbox root as it was.
  const name = async (entry: SandboxEntry, request: SandboxRequest): Promise<void> => {
    if (entry.name !== '') return;
    if (!hasInstallationKey(request.paths.root)) await context.driver.ping();
    entry.name = nameOf(context, request);
  };

  return async (entry, request, exec) => {
    if (exec.command.includes('\0')) throw new SandboxError('COMMAND_INVALID', 'the command contains a NUL byte, which no shell can run; remove it');
    const started = performance.now();
    await name(entry, request);
    let result: SessionRunResult | undefined;
    for (let attempt = 0; attempt < 2 && !result; attempt++) {
      try {
        await shells.ensureReady(entry, request);
        result = await shells.runOnce(entry, request, exec);
      } catch (error) {
        const code = codeOf(error);
        const neverStarted = (error instanceof SessionClosedError && !error.started) || code === 'SANDBOX_GONE' || code === 'SANDBOX_CONFLICT';
        shells.drop(entry);
        entry.running = false;
        if (!neverStarted || attempt === 1) throw error;
        logger?.info(`berth: sandbox ${entry.name} was gone; bringing it back`);
      }
    }
    const final = result!;
    const secrets = settings.docker_mask_secrets ? request.environment.secrets : undefined;
    return {
      exitCode: final.timedOut ? 124 : final.status,
      stdout: maskOutput(final.stdout, secrets, settings.docker_output_limit),
      stderr: maskOutput(final.stderr, secrets, settings.docker_output_limit),
      timedOut: final.timedOut,
      truncated: final.stdout.truncated || final.stderr.truncated,
      durationMs: performance.now() - started,
    };
  };
}
