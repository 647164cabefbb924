import { readdirSync } from 'node:fs';
import path from 'node:path';
import { splitProfileFolderName, type SandboxRequest } from '@berth/core';
import { disksFolderOf, POOL_SLOT_PREFIX } from '@berth/core/driver';
import type { ExecuteTarget } from '../create-berth.js';
import type { SandboxRecord } from './sandbox-record.js';

/** The names in a folder, read once; nothing when it is not there. Never follows a link. */
function entries(folder: string, keep: (entry: { name: string; isDirectory(): boolean; isFile(): boolean }) => boolean): string[] {
  try {
    return readdirSync(folder, { withFileTypes: true })
      .filter(keep)
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}

/** `%XX` escapes of a folder form back to the string (core's encodeFolderComponent); `undefined` when it is not one. */
function decodeFolderForm(form: string): string | undefined {
  if (form.includes('~')) return undefined; // a long id's hashed form: not reversible
  try {
    return decodeURIComponent(form);
  } catch {
    return undefined;
  }
}

/**
 * The session a scope folder's name stands for, found by asking the resolver and keeping only an
 * answer whose folder is exactly this one (so a name never passes for someone else's): a task
 * (`name`, or `task~escaped`), or a user (`platform@escaped id`); either inside a host profile
 * (`profile~name~` before it, core's profile.ts).
 */
function targetOf(name: string): ExecuteTarget[] {
  const inProfile = splitProfileFolderName(name);
  if (inProfile) {
    return targetOf(inProfile.folderName).map((target) => ({ ...target, session: { ...target.session, profile: inProfile.profile } }));
  }
  const at = name.indexOf('@');
  if (at > 0) {
    const id = decodeFolderForm(name.slice(at + 1));
    return id === undefined ? [] : [{ session: { platform: name.slice(0, at), userId: id } }];
  }
  const task = name.startsWith('task~') ? decodeFolderForm(name.slice('task~'.length)) : name;
  return task === undefined ? [] : [{ taskId: task }];
}

/**
 * Scopes under the sandbox root that hold files (a folder, a disk image) but no container: those
 * whose container was removed without `--purge`, or that something else left. `berth ls` lists
 * them so that they can be found, and removed with `berth rm --purge`. Berth's own entries (names
 * beginning with a dot) are not scopes; a folder form is never one.
 */
export function filesOnlyRecords(root: string, request: (target: ExecuteTarget) => SandboxRequest, withContainer: ReadonlySet<string>): SandboxRecord[] {
  const folders = new Set([
    // The warm pool's folders (`pool~`) are nobody's until a hand-over renames them.
    ...entries(root, (entry) => entry.isDirectory() && !entry.name.startsWith('.') && !entry.name.startsWith(POOL_SLOT_PREFIX)),
    // Berth's own images (a spare disk made ahead) begin with a dot, as its own folders do.
    ...entries(
      disksFolderOf(root),
      (entry) => entry.isFile() && entry.name.endsWith('.ext4') && !entry.name.startsWith('.') && !entry.name.startsWith(POOL_SLOT_PREFIX),
    ).map((name) => name.slice(0, -'.ext4'.length)),
  ]);
  const records: SandboxRecord[] = [];
  for (const name of [...folders].sort()) {
    if (withContainer.has(name)) continue;
    let scope: SandboxRequest['scope'] | undefined;
    for (const target of targetOf(name)) {
      try {
        const resolved = request(target);
        if (path.basename(resolved.paths.folder) === name) scope = resolved.scope;
      } catch {
        // Not a name this installation's adapters give: listed by its folder alone.
      }
    }
    const folder = path.join(root, name);
    records.push({
      scope: scope?.key ?? null,
      kind: scope?.kind ?? null,
      platform: scope?.kind === 'user' ? scope.primary.platform : null,
      user: scope?.kind === 'user' ? scope.primary.id : null,
      task: scope?.kind === 'task' ? scope.taskId : null,
      profile: scope?.profile ?? null,
      containerId: null,
      state: 'files only',
      workspace: path.join(folder, 'workspace'),
      home: path.join(folder, 'home'),
      lastUsed: null,
      disk: null,
    });
  }
  return records;
}
