import { createHmac } from 'node:crypto';
import path from 'node:path';
import { expandHome, type HostLogger, type SandboxRequest } from '@berth/core';
import { hasInstallationKey, readInstallationKey } from '@berth/core/driver';
import { containerName } from '../container-name.js';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import { maskCommandLine } from '../output/mask-command-line.js';
import type { RuntimeObserver } from '../runtime-observer.js';
import type { SandboxSettings } from '../sandbox-settings.js';
import { openAuditFile, type AuditFile } from './audit-file.js';

/** What can happen to a sandbox, as the audit trail and the metrics name it. */
export const AUDIT_EVENTS = ['created', 'adopted', 'recreated', 'started', 'frozen', 'thawed', 'stopped', 'removed', 'purged', 'refused'] as const;

/** What happened to a sandbox, as the audit trail names it. */
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

/** How a command can end, as the audit trail and the metrics name it. */
export const AUDIT_OUTCOMES = ['ran', 'refused', 'failed'] as const;

/** How a command ended: it ran (whatever its exit code), was refused before it reached the engine, or failed in Berth or the engine. */
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** One command, as {@link AuditTrail.command} records it. */
export interface AuditedCommand {
  readonly command: string;
  readonly outcome: AuditOutcome;
  /** A refusal's or failure's error code (`USER_RATE_LIMIT`, `SANDBOX_LIMIT`, …). */
  readonly reason?: string;
  readonly exitCode?: number;
  readonly durationMs: number;
  /** Bytes the command wrote to stdout and stderr, before Berth's output limit cut them. */
  readonly bytesOut?: number;
  readonly timedOut?: boolean;
}

/** The audit trail of one runtime: one JSON line per command and per sandbox event (docs/observability.md). */
export interface AuditTrail extends RuntimeObserver {
  /** Whether `terminal.audit_file` is set. */
  readonly enabled: boolean;
  /** Records one command of `entry`'s sandbox; its first line is masked with the request's secrets. */
  command(entry: SandboxEntry, request: SandboxRequest, command: AuditedCommand): void;
  /** Records what happened to `entry`'s sandbox, and why. */
  event(entry: SandboxEntry, event: AuditEvent, reason?: string): void;
  /** Resolves once every line so far is written or dropped. */
  flush(): Promise<void>;
  /** Flushes, and closes the file once no runtime of the process uses it. */
  close(): Promise<void>;
}

/** The file of each path, shared by the runtimes of one process so that one writer rotates it. */
const files = new Map<string, { file: AuditFile; users: number }>();

function shareFile(where: string, settings: SandboxSettings, logger: HostLogger | undefined): { file: AuditFile; release: () => Promise<void> } {
  let shared = files.get(where);
  if (!shared) {
    shared = { file: openAuditFile({ path: where, maxBytes: settings.audit_max_mb * 1024 * 1024, keep: settings.audit_keep, logger }), users: 0 };
    files.set(where, shared);
  }
  shared.users++;
  const held = shared;
  let released = false;
  return {
    file: held.file,
    async release() {
      if (released) return;
      released = true;
      held.users--;
      if (held.users > 0) return held.file.flush();
      files.delete(where);
      await held.file.close();
    },
  };
}

/** The sandbox root a scope's entry belongs to, when known. */
const rootOf = (entry: SandboxEntry): string | undefined => entry.paths?.root ?? (entry.recordedAt ? path.dirname(path.dirname(entry.recordedAt)) : undefined);

/**
 * The audit trail over `terminal.audit_file`; without it, one that records nothing. A user is
 * `platform:id` only with `audit_real_user_ids`; else an opaque id, a digest of the identity
 * keyed with the installation key (stable across restarts, unrelated to the sandbox's name).
 */
export function createAuditTrail(options: {
  readonly settings: SandboxSettings;
  readonly logger?: HostLogger | undefined;
  readonly namePrefix: string;
}): AuditTrail {
  const { settings, logger } = options;
  if (settings.audit_file === undefined) {
    return { enabled: false, command() {}, event() {}, flush: async () => {}, close: async () => {} };
  }
  const { file, release } = shareFile(path.resolve(expandHome(settings.audit_file)), settings, logger);
  const users = new WeakMap<SandboxEntry, string>();

  const userOf = (entry: SandboxEntry): string | null => {
    const { owner } = entry;
    if (owner.kind !== 'user' || owner.platform === undefined || owner.userId === undefined) return null;
    const identity = `${owner.platform}:${owner.userId}`;
    if (settings.audit_real_user_ids) return identity;
    const known = users.get(entry);
    if (known) return known;
    const root = rootOf(entry);
    let key: Buffer | undefined;
    try {
      key = root === undefined ? undefined : readInstallationKey(root);
    } catch {
      key = undefined;
    }
    // No key yet: the installation has no sandbox, and nothing is made to name a user.
    if (!key) return null;
    const opaque = `u-${createHmac('sha256', key).update(`berth audit user\n${identity}`, 'utf8').digest('hex').slice(0, 24)}`;
    users.set(entry, opaque);
    return opaque;
  };

  const sandboxOf = (entry: SandboxEntry, request?: SandboxRequest): string | null => {
    if (entry.name !== '') return entry.name;
    // A command refused before its sandbox was named: named now only if that makes nothing.
    if (request && hasInstallationKey(request.paths.root)) return containerName(request, options.namePrefix);
    return null;
  };

  const append = (entry: SandboxEntry, record: Record<string, unknown>, request?: SandboxRequest): void => {
    try {
      file.append(entry.scopeKey, {
        time: new Date().toISOString(),
        type: record.type,
        sandbox: sandboxOf(entry, request),
        user: userOf(entry),
        scope: entry.owner.kind,
        ...record,
      });
    } catch (error) {
      // Never a command's failure: an audit line that cannot even be made is logged.
      logger?.warn(`berth: an audit line could not be made: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  return {
    enabled: true,
    command(entry, request, command) {
      const { command: text, durationMs, ...rest } = command;
      append(
        entry,
        {
          type: 'command',
          // Masked whatever docker_mask_secrets says: the audit file never holds a secret value.
          command: maskCommandLine(text, request.environment.secrets),
          ...rest,
          durationMs: Math.round(durationMs),
        },
        request,
      );
    },
    event(entry, event, reason) {
      append(entry, { type: 'sandbox', event, ...(reason === undefined ? {} : { reason }) });
    },
    flush: () => file.flush(),
    close: release,
  };
}
