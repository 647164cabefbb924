import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { SandboxPaths, SandboxRequest, SandboxScope } from '@berth/core';
import { POOL_SLOT_PREFIX, type SandboxDriverV1, type SandboxSpec } from '@berth/core/driver';
import { prepareHostFolders } from '../host-files/host-folders.js';
import { closeQuietly, openFolder } from '../host-files/folder-descriptor.js';
import { removeTree } from '../host-files/remove-tree.js';
import { lockScope } from '../host-files/scope-lock.js';
import { mountsOn, unmount } from '../disks/loop-mounts.js';
import { isProcessIdentityGone, processIdentity } from '../lifecycle/process-identity.js';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import { messageOf, type RuntimeContext } from '../runtime-context.js';
import { buildSandboxSpec, hashSpec, LABELS, MANAGED_BY } from '../sandbox-spec.js';
import { channelsFolderOf } from '../shell/fifo-channel.js';
import { isNewScope, moveSlotFiles, slotPaths } from './handover-files.js';
import { forgetHandover, POOL_KIND, POOL_LABEL, readHandover, recordedSlots, writeHandover } from './handover-records.js';

/** The warm pool of one runtime (docs/sandbox-runtime.md, "The warm pool"). */
export interface WarmPool {
  /**
   * Gives the request's new user a started pooled sandbox, renamed theirs; its id, or undefined
   * when it cannot (none ready, the user has files already, other settings). Call it holding the
   * user's scope lock, with the spec their own sandbox would have.
   */
  handOver(entry: SandboxEntry, request: SandboxRequest, spec: SandboxSpec): Promise<string | undefined>;
  /**
   * Keeps `docker_pool_size` pooled sandboxes ready under `root` from now on, after clearing what
   * a gateway that died left there; resolves once the first filling ends.
   */
  serve(root: string): Promise<void>;
  /** How many are ready. */
  readonly ready: () => number;
  /** Removes the ready ones, and their folders. */
  close(): Promise<void>;
}

/** How long after a hand-over the next pooled sandbox is made: at once, it would compete with the new user's first command. */
const REFILL_DELAY_MS = 300;
/** How often a pool short of its size looks again for room. */
const RETRY_MS = 10_000;
/** How long the pool rests after failing to make one: doubled after each failure in a row, up to a minute. */
const FAILED_REST_MS = 5_000;
const FAILED_REST_MAX_MS = 60_000;
/** The placeholder scope a pooled sandbox is built for: its labels are replaced, and it names no one. */
const NOBODY = { kind: 'task', key: 'pool', taskId: 'pool', folderName: 'pool', slug: 'pool' } as unknown as SandboxScope;

interface Ready {
  readonly id: string;
  readonly slot: string;
  readonly paths: SandboxPaths;
  /** The digest of its settings, names, labels and folders aside: a hand-over needs the user's to match. */
  readonly settings: string;
}

/** A spec's settings, apart from whose it is: what a pooled sandbox must share with its user's. */
export const settingsOf = (spec: SandboxSpec): string =>
  hashSpec({ ...spec, name: '', labels: {}, workspace: '', home: '', channels: spec.channels === undefined ? undefined : '' });

/** What the pool needs of the runtime besides its context. */
export interface WarmPoolHooks {
  /** Makes sure the image is on the engine (the lifecycle's, pulled once). */
  readonly ensureImage: () => Promise<void>;
  /** Whether another running sandbox fits the capacity caps now. */
  readonly hasRoom: () => Promise<boolean>;
  /** After one started: the bound's shares (the lifecycle's `afterStart`). */
  readonly afterStart?: () => Promise<void>;
  /** The driver as the engine labels its sandboxes, records not read (handed-over ones still show as pooled). */
  readonly engine: SandboxDriverV1;
}

export function createWarmPool(context: RuntimeContext, hooks: WarmPoolHooks): WarmPool {
  const { driver, settings, logger } = context;
  const size = driver.capabilities.hostFolders ? settings.docker_pool_size : 0;
  const maker = processIdentity();
  const ready: Ready[] = [];
  const served = new Map<string, Promise<void>>();
  let making: Promise<void> | undefined;
  let restUntil = 0;
  let failures = 0;
  let closed = false;

  const lockSlot = (paths: SandboxPaths, purpose: string) => lockScope(paths, { waitMs: 30_000, purpose });

  /** The spec of a pooled sandbox in `slot`: the user's settings, labels naming no one. */
  const specOf = async (root: string, slot: string, paths: SandboxPaths): Promise<SandboxSpec> => {
    const bound = await context.sharedBound();
    const runtimeMounts = await context.egress.mounts(root);
    const { spec } = buildSandboxSpec({
      ...(runtimeMounts.length > 0 ? { runtimeMounts } : {}),
      ...(bound.parent ? { cgroupParent: bound.parent } : {}),
      settings,
      image: context.image,
      name: `${context.namePrefix}pool-${slot}`,
      scope: NOBODY,
      paths,
      engine: driver.engine,
      specRevision: driver.specRevision,
      extraLabels: context.extraLabels,
      channels: channelsFolderOf(paths.folder),
    });
    const labels = Object.fromEntries(Object.entries(spec.labels).filter(([key]) => key !== LABELS.scope && key !== LABELS.task));
    return { ...spec, labels: { ...labels, [LABELS.kind]: POOL_KIND, [POOL_LABEL]: slot, [LABELS.maker]: maker } };
  };

  /** Removes a slot's folder and disk (what nobody's files are in); never throws. */
  const clearSlot = async (paths: SandboxPaths): Promise<void> => {
    try {
      // Whatever is mounted there is the pool's: a hand-over cut short may have left its disk,
      // renamed already, mounted on the slot (its user's next start mounts it on their folder).
      for (let guard = 0; mountsOn(paths.folder).length > 0 && guard < 8; guard++) await unmount(paths.folder);
      await context.disks.purge(paths);
      const root = openFolder(paths.root, 'the sandbox root');
      try {
        await removeTree(root, path.basename(paths.folder));
      } finally {
        closeQuietly(root);
      }
    } catch (error) {
      logger?.warn(`berth: clearing the pool's folder ${paths.folder} failed: ${messageOf(error)}`);
    }
  };

  const makeOne = async (root: string): Promise<void> => {
    const slot = randomBytes(16).toString('hex');
    const paths = slotPaths(root, slot);
    const lock = await lockSlot(paths, 'make a pooled sandbox');
    let id: string | undefined;
    try {
      await prepareHostFolders(paths, context.disks.ensure);
      await Promise.all([context.prepareNetwork(root), hooks.ensureImage()]);
      const spec = await specOf(root, slot, paths);
      await driver.prepare?.(spec);
      id = await driver.create(spec);
      if (id === undefined) throw new Error(`the name ${spec.name} was taken`);
      await context.confirmNetwork();
      await driver.start(id, { justCreated: true });
      await hooks.afterStart?.();
      ready.push({ id, slot, paths, settings: settingsOf(spec) });
    } catch (error) {
      if (id !== undefined) await driver.remove(id).catch(() => undefined);
      await clearSlot(paths);
      throw error;
    } finally {
      lock.release();
    }
  };

  const fill = (root: string): Promise<void> | undefined => {
    if (closed || making || size === 0) return making;
    if (Date.now() < restUntil) {
      setTimeout(() => fill(root), restUntil - Date.now()).unref();
      return undefined;
    }
    making = (async () => {
      while (!closed && ready.length < size && (await hooks.hasRoom())) {
        await makeOne(root);
        failures = 0;
      }
    })()
      .catch((error: unknown) => {
        failures++;
        restUntil = Date.now() + Math.min(FAILED_REST_MAX_MS, FAILED_REST_MS * 2 ** (failures - 1));
        logger?.warn(`berth: making a pooled sandbox failed; new users' sandboxes are made for them meanwhile: ${messageOf(error)}`);
      })
      .finally(() => {
        making = undefined;
        // No room now (the caps), or a failure: looked at again later, as nothing else may ask.
        if (!closed && ready.length < size) setTimeout(() => fill(root), restUntil > Date.now() ? restUntil - Date.now() : RETRY_MS).unref();
      });
    return making;
  };

  /** What a gateway that died left under `root`: its ready sandboxes, hand-overs it did not finish, their records and folders. */
  const clearLeftovers = async (root: string): Promise<void> => {
    const pooled = (await hooks.engine.list({ ...context.extraLabels, [LABELS.managedBy]: MANAGED_BY, [LABELS.kind]: POOL_KIND })).filter((sandbox) =>
      (sandbox.labels[LABELS.workspace] ?? '').startsWith(`${root}${path.sep}`),
    );
    const kept = new Set<string>();
    for (const sandbox of pooled) {
      const slot = sandbox.labels[POOL_LABEL] ?? '';
      const live = !isProcessIdentityGone(sandbox.labels[LABELS.maker] ?? '');
      if (readHandover(root, slot)?.name === sandbox.name || (live && !readHandover(root, slot))) {
        kept.add(slot);
        continue;
      }
      // Never handed over, or its hand-over stopped before it was renamed: no command of anyone's
      // ran in it. A live process's hand-over holds the slot's lock: looked at again under it.
      const lock = await lockSlot(slotPaths(root, slot), 'clear a pooled sandbox a gateway left');
      try {
        const now = await hooks.engine.inspect(sandbox.id);
        if (now && readHandover(root, slot)?.name === now.name) {
          kept.add(slot);
          continue;
        }
        await driver.remove(sandbox.id).catch(() => undefined);
        forgetHandover(root, slot);
      } finally {
        lock.release();
      }
    }
    for (const slot of recordedSlots(root)) if (!kept.has(slot)) forgetHandover(root, slot);
    let names: string[] = [];
    try {
      names = readdirSync(root).filter((name) => name.startsWith(POOL_SLOT_PREFIX));
    } catch {
      return;
    }
    for (const name of names) {
      const slot = name.slice(POOL_SLOT_PREFIX.length);
      if (kept.has(slot) || ready.some((one) => one.slot === slot)) continue;
      const paths = slotPaths(root, slot);
      const lock = await lockSlot(paths, 'clear a pooled sandbox a gateway left');
      try {
        // Made by a live process meanwhile: its sandbox exists now.
        if ((await hooks.engine.list({ [POOL_LABEL]: slot })).length === 0) await clearSlot(paths);
      } finally {
        lock.release();
      }
    }
  };

  /** Hands `taken` to the request's user, holding the slot's lock; undefined (and it gone) when that fails. */
  const handTo = async (taken: Ready, entry: SandboxEntry, request: SandboxRequest, spec: SandboxSpec): Promise<string | undefined> => {
    const { id, slot, paths } = taken;
    const root = paths.root;
    const lock = await lockSlot(paths, `hand a pooled sandbox to ${request.scope.key}`);
    let moved = false;
    try {
      // The record first (it names no one until the rename), then the files, then the name.
      writeHandover(root, slot, { name: entry.name, labels: spec.labels });
      await moveSlotFiles(paths, request.paths);
      moved = true;
      await driver.rename(id, entry.name);
      logger?.info(`berth: handed a pooled sandbox to ${entry.scopeKey} as ${entry.name}`);
      return id;
    } catch (error) {
      // Nothing of the user's ran in it: it goes, and their sandbox is made for them.
      logger?.warn(`berth: handing a pooled sandbox to ${entry.scopeKey} failed; making one for them instead: ${messageOf(error)}`);
      await driver.remove(id).catch(() => undefined);
      forgetHandover(root, slot);
      if (!moved) await clearSlot(paths);
      return undefined;
    } finally {
      lock.release();
    }
  };

  /** Removes a ready one that stopped under the pool (an engine restart, a stop from outside), in the background. */
  const discard = (taken: Ready): void => {
    void (async () => {
      const lock = await lockSlot(taken.paths, 'clear a pooled sandbox that stopped');
      try {
        await driver.remove(taken.id).catch(() => undefined);
        await clearSlot(taken.paths);
      } finally {
        lock.release();
      }
    })().catch((error: unknown) => logger?.warn(`berth: clearing a stopped pooled sandbox failed: ${messageOf(error)}`));
  };

  const handOver: WarmPool['handOver'] = async (entry, request, spec) => {
    if (size === 0 || !isNewScope(request.paths)) return undefined;
    const root = request.paths.root;
    const wanted = settingsOf(spec);
    try {
      for (;;) {
        const index = ready.findIndex((one) => one.paths.root === root && one.settings === wanted);
        if (index < 0) return undefined;
        const [taken] = ready.splice(index, 1);
        // Only a running one: one the engine stopped would start again on the slot's folders.
        const state = (await hooks.engine.inspect(taken!.id).catch(() => undefined))?.state;
        if (state === 'running') return await handTo(taken!, entry, request, spec);
        discard(taken!);
      }
    } finally {
      setTimeout(() => fill(root), REFILL_DELAY_MS).unref();
    }
  };

  const serve: WarmPool['serve'] = (root) => {
    if (size === 0) return Promise.resolve();
    let started = served.get(root);
    if (!started) {
      started = clearLeftovers(root)
        .catch((error: unknown) => logger?.warn(`berth: clearing what an earlier gateway left in the pool failed: ${messageOf(error)}`))
        .then(() => fill(root));
      served.set(root, started);
    }
    return started.then(() => making);
  };

  return {
    handOver,
    serve,
    ready: () => ready.length,
    async close() {
      closed = true;
      await making;
      for (const one of ready.splice(0)) {
        await driver.remove(one.id).catch(() => undefined);
        await clearSlot(one.paths);
      }
    },
  };
}
