import { BerthError, type ExecRequest, type ExecResult, type SandboxRequest } from '@berth/core';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import type { CommandUsage } from '../run-command.js';
import type { RuntimeObserver } from '../runtime-observer.js';
import type { CpuDay } from './cpu-day.js';
import type { UserLimits } from './user-limits.js';

/** Codes of a command refused before it ran (the rest are failures): the audit trail's `outcome`. */
const REFUSAL_CODES: ReadonlySet<string> = new Set([
  'USER_RATE_LIMIT',
  'USER_CONCURRENCY_LIMIT',
  'USER_CPU_LIMIT',
  'COMMAND_INVALID',
  'SANDBOX_LIMIT',
  'SANDBOX_PURGING',
  'SANDBOX_NAME_TAKEN',
  'EGRESS_ALLOWLIST_UNENFORCED',
]);

const codeOf = (error: unknown): string => (error instanceof BerthError ? error.code : 'INTERNAL');

/**
 * A command through the per-user limits and into the audit trail: the one path every command of
 * a runtime takes (`doExec`: the terminal tool, `berth serve`, `berth exec`, file transfers), so
 * each is limited and audited exactly once. A refusal by a limit happens before the command
 * reaches the sandbox's queue or the engine.
 */
export function createAuditedExec(parts: {
  /** Told of each command: the audit trail and the runtime's other observers. */
  readonly observer: Pick<RuntimeObserver, 'command'>;
  readonly limits: UserLimits;
  readonly cpu: Pick<CpuDay, 'check'>;
  readonly run: (entry: SandboxEntry, request: SandboxRequest, exec: ExecRequest, usage: CommandUsage) => Promise<ExecResult>;
}): (entry: SandboxEntry, request: SandboxRequest, exec: ExecRequest) => Promise<ExecResult> {
  const { observer, limits } = parts;
  return async (entry, request, exec) => {
    const started = performance.now();
    const failed = (error: unknown): void => {
      const reason = codeOf(error);
      observer.command(entry, request, {
        command: exec.command,
        outcome: REFUSAL_CODES.has(reason) ? 'refused' : 'failed',
        reason,
        durationMs: performance.now() - started,
      });
    };
    let slot: ReturnType<UserLimits['admit']>;
    try {
      parts.cpu.check(entry.scopeKey);
      slot = limits.admit(entry.scopeKey);
    } catch (error) {
      failed(error);
      throw error;
    }
    const usage: CommandUsage = { outputBytes: 0 };
    try {
      const result = await parts.run(entry, request, exec, usage);
      observer.command(entry, request, {
        command: exec.command,
        outcome: 'ran',
        exitCode: result.exitCode,
        durationMs: result.durationMs,
        bytesOut: usage.outputBytes,
        ...(result.timedOut ? { timedOut: true } : {}),
      });
      return result;
    } catch (error) {
      failed(error);
      throw error;
    } finally {
      slot.release();
    }
  };
}
