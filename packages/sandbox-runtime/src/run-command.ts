import { INTERRUPTED_EXIT_CODE, isRetryableSandboxError, SandboxError, type ExecRequest, type ExecResult, type SandboxRequest } from '@berth/core';
import { hasInstallationKey } from '@berth/core/driver';
import { containerName } from './container-name.js';
import { maskOutput } from './output/mask-output.js';
import { assertRuntimeOffered } from './oci-runtime.js';
import { createStreamMasker } from './output/stream-masker.js';
import type { RuntimeContext } from './runtime-context.js';
import type { SandboxEntry } from './lifecycle/sandbox-entry.js';
import type { ShellSessions } from './shell/shell-sessions.js';
import type { SessionRunResult } from './shell/shell-session.js';

/** Said (on stderr) when a command deleted the session's state folder. */
export const STATE_LOST_NOTICE =
  "berth: this sandbox's shell state (its folder in /tmp) was deleted, so the cd and export of earlier commands are lost; the command ran in a " +
  "new shell, in /workspace with the sandbox's variables\n";

/** The exit status of a command whose sandbox the fair-share guard stopped under it: as a SIGKILL's. */
export const RECLAIMED_EXIT_CODE = 137;

/** The guard's line for the entry, as a line of stderr, taken once. */
function takeReclaimed(entry: SandboxEntry): string | undefined {
  const why = entry.reclaimed;
  entry.reclaimed = undefined;
  return why === undefined ? undefined : `${why}\n`;
}

/** Said (on stderr) when a command ended its shell before its cd and export could be saved. */
export const STATE_NOT_SAVED_NOTICE =
  'berth: this command ended its shell before Berth could save its cd and export (an exit after its own trap … EXIT, or an exec), so they were not kept\n';

/**
 * Said instead when the save failed for want of memory (the output says "Cannot allocate memory":
 * a full shared bound fails a write to /tmp at once, docs/backend-docker.md#fair-share).
 */
export const STATE_NOT_SAVED_NO_MEMORY_NOTICE =
  "berth: this command's cd and export could not be saved (the sandbox's /tmp had no memory for them, as said above), so they were not kept\n";

/** Said (on stderr) when Berth could not write a command into its sandbox's shell: it did not run. */
export const NOT_WRITTEN_NOTICE =
  "berth: this command did not run: Berth could not write it into the sandbox's /tmp (the line above says why; a full shared memory bound " +
  'fails such a write for a moment); run it again\n';

/** Said (on stderr) when a command deleted its session's state folder. */
export const STATE_DELETED_NOTICE =
  "berth: this command deleted the sandbox's shell state (its folder in /tmp), so the cd and export of earlier commands are lost; the next " +
  "command starts a new shell, in /workspace with the sandbox's variables\n";

/** What a command used, filled in by the command runner for the audit trail. */
export interface CommandUsage {
  /** Bytes written to stdout and stderr, before the output limit cut them. */
  outputBytes: number;
}

/**
 * Runs one command in its sandbox: names the sandbox, gets it ready, runs the command, retries
 * once when the sandbox or its shell was gone before the command started (it cannot have run),
 * and masks the scope's secrets in what comes back — the one place Berth masks.
 */
export function createCommandRunner(
  context: RuntimeContext,
  shells: ShellSessions,
): (entry: SandboxEntry, request: SandboxRequest, exec: ExecRequest, usage?: CommandUsage) => Promise<ExecResult> {
  const { settings, logger } = context;

  // A new installation's key is made only once the engine has answered: a command that fails for
  // want of an engine, or for a docker_runtime it does not have, leaves the sandbox root as it was.
  const name = async (entry: SandboxEntry, request: SandboxRequest): Promise<void> => {
    if (entry.name !== '') return;
    if (settings.docker_runtime !== undefined) assertRuntimeOffered(settings.docker_runtime, await context.driver.describe({ runtimeVersions: false }));
    if (!hasInstallationKey(request.paths.root)) await context.driver.ping();
    entry.name = containerName(request, context.namePrefix);
  };

  return async (entry, request, exec, usage) => {
    if (exec.command.includes('\0')) throw new SandboxError('COMMAND_INVALID', 'the command contains a NUL byte, which no shell can run; remove it');
    const started = performance.now();
    if (exec.signal?.aborted) return { exitCode: INTERRUPTED_EXIT_CODE, stdout: '', stderr: '', timedOut: false, truncated: false, durationMs: 0 };
    await name(entry, request);
    const secrets = settings.docker_mask_secrets ? request.environment.secrets : undefined;
    // Output shown as it comes is masked as it comes (stream-masker.ts), as the result is below.
    const live = exec.onOutput;
    const maskers = live && {
      stdout: createStreamMasker(secrets, (text) => live('stdout', text)),
      stderr: createStreamMasker(secrets, (text) => live('stderr', text)),
    };
    const taps = maskers && { onStdout: (chunk: Uint8Array) => maskers.stdout.write(chunk), onStderr: (chunk: Uint8Array) => maskers.stderr.write(chunk) };
    let result: SessionRunResult | undefined;
    let notice = '';
    // The fair-share guard stopped this sandbox since its last command: said first, once.
    const reclaimedBefore = takeReclaimed(entry);
    if (reclaimedBefore) live?.('stderr', reclaimedBefore);
    for (let attempt = 0; attempt < 2 && !result; attempt++) {
      try {
        await shells.ensureReady(entry, request);
        result = await shells.runOnce(entry, request, exec, taps);
        if (result.stateLost && attempt === 0) {
          // A command deleted the session's state folder: the command did not run; run it once in
          // a new session (it retired the old one), and say what was lost.
          notice = STATE_LOST_NOTICE;
          live?.('stderr', notice);
          result = undefined;
        }
      } catch (error) {
        shells.drop(entry);
        entry.running = false;
        // Stopped under this command by the fair-share guard: the user hears why, not the engine's error.
        const reclaimed = takeReclaimed(entry);
        if (reclaimed) {
          maskers?.stdout.end();
          maskers?.stderr.end();
          live?.('stderr', reclaimed);
          return { exitCode: RECLAIMED_EXIT_CODE, stdout: '', stderr: reclaimed, timedOut: false, truncated: false, durationMs: performance.now() - started };
        }
        // Retried only when it never started (the error says, as its maker decided): it cannot have run.
        if (!isRetryableSandboxError(error) || attempt === 1) throw error;
        logger?.info(`berth: sandbox ${entry.name} was gone; bringing it back`);
      }
    }
    const final = result!;
    if (usage) usage.outputBytes = final.stdout.totalBytes + final.stderr.totalBytes;
    maskers?.stdout.end();
    maskers?.stderr.end();
    if (final.notWritten) notice += NOT_WRITTEN_NOTICE;
    else if (final.stateNotSaved) notice += /Cannot allocate memory/.test(final.stderr.text()) ? STATE_NOT_SAVED_NO_MEMORY_NOTICE : STATE_NOT_SAVED_NOTICE;
    const reclaimedNow = takeReclaimed(entry);
    if (reclaimedNow) notice += reclaimedNow;
    if (final.stateDeleted) notice += STATE_DELETED_NOTICE;
    if (live && notice !== '' && notice !== STATE_LOST_NOTICE)
      live('stderr', notice.slice(notice.startsWith(STATE_LOST_NOTICE) ? STATE_LOST_NOTICE.length : 0));
    const stderr = maskOutput(final.stderr, secrets, settings.docker_output_limit);
    const before = reclaimedBefore ?? '';
    return {
      exitCode: reclaimedNow ? RECLAIMED_EXIT_CODE : final.status,
      stdout: maskOutput(final.stdout, secrets, settings.docker_output_limit),
      // A notice about an earlier loss comes first; one about this command's own doing, last.
      stderr:
        before +
        (notice === ''
          ? stderr
          : notice === STATE_LOST_NOTICE
            ? `${notice}${stderr}`
            : `${stderr}${stderr.endsWith('\n') || stderr === '' ? '' : '\n'}${notice}`),
      timedOut: final.timedOut,
      truncated: final.stdout.truncated || final.stderr.truncated,
      durationMs: performance.now() - started,
    };
  };
}
