import path from 'node:path';
import { escapeForDisplay, type SandboxInfo } from '@berth/core';

/** One sandbox as `berth ls --json` prints it. */
export interface SandboxRecord {
  /**
   * The scope key, e.g. `user:telegram:123456789` or `task:default`; `null` for files whose folder
   * name is not one this installation's adapters give (state `files only`).
   */
  readonly scope: string | null;
  readonly kind: 'user' | 'task' | null;
  readonly platform: string | null;
  readonly user: string | null;
  readonly task: string | null;
  /** The host profile the sandbox belongs to; `null` for the default profile. */
  readonly profile: string | null;
  /** `null` when the scope holds only files (state `files only`): no container, a folder or a disk. */
  readonly containerId: string | null;
  readonly state: string;
  readonly workspace: string;
  readonly home: string;
  /** ISO time of the last command, or `null` when the backend does not know. */
  readonly lastUsed: string | null;
  /** Use of the sandbox's own disk against `container_disk`, or `null` when it has none mounted. */
  readonly disk: { readonly usedMb: number; readonly limitMb: number } | null;
}

/** Turns a backend's {@link SandboxInfo} into the stable `berth ls --json` shape. */
export function toSandboxRecord(info: SandboxInfo): SandboxRecord {
  return {
    scope: info.scopeKey,
    kind: info.kind,
    platform: info.platform ?? null,
    user: info.userId ?? null,
    task: info.taskId ?? null,
    profile: info.profile ?? null,
    containerId: info.containerId,
    state: info.state,
    workspace: info.workspace,
    home: info.home,
    lastUsed: info.lastUsed ?? null,
    disk: info.disk ?? null,
  };
}

/**
 * Who a record's sandbox is for, as `berth ls` and `berth top` show it: `platform:user`, `task T`,
 * or `? FOLDER`; escaped, since labels come from the engine and a container carries whatever it was given.
 */
export function sandboxOwner(
  record: Pick<SandboxRecord, 'kind' | 'platform' | 'user' | 'task'> & { readonly profile?: string | null; readonly workspace?: string },
): string {
  const who =
    record.kind === 'user'
      ? `${record.platform}:${record.user}`
      : record.kind === 'task'
        ? `task ${record.task}`
        : `? ${path.basename(path.dirname(record.workspace ?? ''))}`;
  // A profile's sandbox names its profile first: the same user in two profiles is two rows.
  return escapeForDisplay(record.profile ? `${record.profile}/${who}` : who);
}

/** The `berth ls` table columns of a record. */
export function sandboxRecordRow(record: SandboxRecord): string[] {
  // Labels come from the engine: whatever a container carries is shown escaped, never raw.
  const disk = record.disk ? `${record.disk.usedMb}/${record.disk.limitMb} MB` : record.containerId === null ? '-' : 'no limit';
  return [
    sandboxOwner(record),
    ...[record.containerId?.slice(0, 12) ?? '-', record.state, record.lastUsed ?? '-', disk, record.workspace, record.home].map(escapeForDisplay),
  ];
}

/**
 * `JSON.stringify` with every invisible, bidi-control and line-separator character written as a
 * `\uXXXX` escape: the same data for a program, and nothing that reorders a terminal's line.
 */
export function stringifyForDisplay(value: unknown): string {
  // JSON.stringify already escapes control characters inside strings; the layout's newlines stay.
  return JSON.stringify(value, null, 2).replace(/[\p{Cf}\p{Zl}\p{Zp}]/gu, (char) =>
    [...Array(char.length).keys()].map((index) => `\\u${char.charCodeAt(index).toString(16).padStart(4, '0')}`).join(''),
  );
}

/** Headers matching {@link sandboxRecordRow}. */
export const SANDBOX_TABLE_HEADERS = ['OWNER', 'CONTAINER', 'STATE', 'LAST USED', 'DISK', 'WORKSPACE', 'HOME'] as const;
