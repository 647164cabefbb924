import { readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DriverSandbox, SandboxDriverV1 } from '@berth/core/driver';
import { POOL_FOLDER } from '@berth/core/driver';
import { closeQuietly, descriptorPath, openChildFolder, openFolder } from '../host-files/folder-descriptor.js';
import { LABELS } from '../sandbox-spec.js';

// A pooled sandbox is made before anyone needs it, so its engine labels name no one, and the
// engines cannot change a container's labels. Its hand-over writes a record instead, in the
// sandbox root's `.berth-pool` folder (the gateway's, never mounted in a sandbox): whose it is
// (the labels it would have had, made for its user), and the name it takes. Every reader of the
// driver sees those labels (`withHandovers`), so listing, adopting, reaping, `berth ls` and `rm`
// treat it as the user's own sandbox. A record counts only while the container bears its name:
// one written by a hand-over that never renamed the sandbox names nobody.

/** The label of a pooled sandbox: its slot, which names its record (`{root}/.berth-pool/{slot}.json`). */
export const POOL_LABEL = 'dev.berth.pool';
/** The `kind` label of a pooled sandbox, whose own labels name no one. */
export const POOL_KIND = 'pool';

/** The labels a record may set: who a sandbox belongs to, where its files are, its settings' digest. */
const OWNED = new Set<string>([
  LABELS.scope,
  LABELS.kind,
  LABELS.platform,
  LABELS.user,
  LABELS.task,
  LABELS.profile,
  LABELS.workspace,
  LABELS.home,
  LABELS.configHash,
]);

/** What a hand-over writes. */
export interface HandoverRecord {
  /** The name the sandbox takes: its user's opaque name. */
  readonly name: string;
  /** The labels its user's sandbox has (`buildSandboxSpec`), the owned ones only. */
  readonly labels: Readonly<Record<string, string>>;
}

const SLOT = /^[0-9a-f]{16,64}$/;

/** The sandbox root of a pooled sandbox: its workspace label is `{root}/pool~{slot}/workspace`. */
const rootOf = (sandbox: Pick<DriverSandbox, 'labels'>): string | undefined => {
  const workspace = sandbox.labels[LABELS.workspace];
  return workspace ? path.dirname(path.dirname(workspace)) : undefined;
};

/** Opens `{root}/.berth-pool`, made when `create`; undefined when it is not there. */
function openRecords(root: string, create: boolean): { root: number; folder: number } | undefined {
  let rootFd: number;
  try {
    rootFd = openFolder(root, 'the sandbox root');
  } catch {
    return undefined;
  }
  try {
    return { root: rootFd, folder: openChildFolder(rootFd, POOL_FOLDER, { ...(create ? { create: 0o700 } : {}), what: "Berth's pool folder" }) };
  } catch {
    closeQuietly(rootFd);
    return undefined;
  }
}

function withRecords<T>(root: string, create: boolean, task: (folder: number) => T): T | undefined {
  const opened = openRecords(root, create);
  if (!opened) return undefined;
  try {
    return task(opened.folder);
  } finally {
    closeQuietly(opened.folder);
    closeQuietly(opened.root);
  }
}

/** Reads a slot's record; undefined when there is none or it does not parse. */
export function readHandover(root: string, slot: string): HandoverRecord | undefined {
  if (!SLOT.test(slot)) return undefined;
  return withRecords(root, false, (folder) => {
    try {
      const parsed = JSON.parse(readFileSync(descriptorPath(folder, `${slot}.json`), 'utf8')) as Partial<HandoverRecord>;
      if (typeof parsed.name !== 'string' || !parsed.labels || typeof parsed.labels !== 'object') return undefined;
      const labels = Object.fromEntries(Object.entries(parsed.labels).filter(([key, value]) => OWNED.has(key) && typeof value === 'string'));
      return { name: parsed.name, labels };
    } catch {
      return undefined;
    }
  });
}

/** Writes a slot's record whole (a file renamed into place); throws what the file system said. */
export function writeHandover(root: string, slot: string, record: HandoverRecord): void {
  const labels = Object.fromEntries(Object.entries(record.labels).filter(([key]) => OWNED.has(key)));
  const written = withRecords(root, true, (folder) => {
    const fresh = descriptorPath(folder, `${slot}.json.new`);
    writeFileSync(fresh, `${JSON.stringify({ name: record.name, labels })}\n`, { mode: 0o600 });
    renameSync(fresh, descriptorPath(folder, `${slot}.json`));
    return true;
  });
  if (!written) throw new Error(`the pool folder of ${root} could not be opened`);
}

/** Deletes a slot's record; nothing when there is none. */
export function forgetHandover(root: string, slot: string): void {
  if (!SLOT.test(slot)) return;
  withRecords(root, false, (folder) => {
    try {
      unlinkSync(descriptorPath(folder, `${slot}.json`));
    } catch {
      // Gone already.
    }
  });
}

/** The slots that have a record under `root`. */
export function recordedSlots(root: string): string[] {
  return (
    withRecords(root, false, (folder) => {
      try {
        return readdirSync(descriptorPath(folder))
          .filter((name) => name.endsWith('.json'))
          .map((name) => name.slice(0, -'.json'.length))
          .filter((slot) => SLOT.test(slot));
      } catch {
        return [];
      }
    }) ?? []
  );
}

/** Whether a sandbox is a pooled one (handed over or not), by its engine labels. */
export const isPooled = (sandbox: Pick<DriverSandbox, 'labels'>): boolean => sandbox.labels[POOL_LABEL] !== undefined;

/** A sandbox as its readers see it: a handed-over pooled one with its record's labels. */
export function asHandedOver(sandbox: DriverSandbox): DriverSandbox {
  const slot = sandbox.labels[POOL_LABEL];
  if (slot === undefined || sandbox.labels[LABELS.kind] !== POOL_KIND) return sandbox;
  const root = rootOf(sandbox);
  const record = root ? readHandover(root, slot) : undefined;
  if (!record || record.name !== sandbox.name) return sandbox;
  return { ...sandbox, labels: { ...sandbox.labels, ...record.labels } };
}

/**
 * The driver every part of a runtime reads through: `inspect` and `list` show handed-over pooled
 * sandboxes with their records' labels, and `list` filters on those labels after, not at, the
 * engine (which knows only the pool's).
 */
export function withHandovers(driver: SandboxDriverV1): SandboxDriverV1 {
  const inspect: SandboxDriverV1['inspect'] = async (nameOrId) => {
    const found = await driver.inspect(nameOrId);
    return found ? asHandedOver(found) : found;
  };
  const list: SandboxDriverV1['list'] = async (labels) => {
    const atEngine = Object.fromEntries(Object.entries(labels).filter(([key]) => !OWNED.has(key)));
    const listed = (await driver.list(atEngine)).map(asHandedOver);
    return listed.filter((sandbox) => Object.entries(labels).every(([key, value]) => sandbox.labels[key] === value));
  };
  // Its own methods read `this`: bound, then the two readers replaced.
  const wrapped = Object.create(driver) as SandboxDriverV1;
  return Object.assign(wrapped, { inspect, list });
}
