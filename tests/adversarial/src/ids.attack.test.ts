import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { IdentityError } from '@berth/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, randomLetters, startAttackGateway, temporarySandboxDir, type AttackGateway, type Sender } from './support/attack-gateway.js';
import { releaseDisksUnder } from '@berth/gateway-plugin';

// Hostile sender ids, as a host would pass them from a platform it does not vet. Each must be
// refused with IdentityError or land in its own folder directly inside {sandbox_dir}/docker,
// and nothing may appear anywhere else under the sandbox root's parent.
const parent = temporarySandboxDir('ids');
const sandboxDir = path.join(parent, 'gateway', 'sandboxes');
const stem = randomLetters(6);
let gateway: AttackGateway;
let before: string[];

/** Every path under `folder`, relative to it. */
function listing(folder: string): string[] {
  const out: string[] = [];
  const walk = (current: string): void => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      out.push(path.relative(folder, full));
      if (entry.isDirectory()) walk(full);
    }
  };
  walk(folder);
  return out.sort();
}

/** Ids that a careless layout would turn into paths outside the root, or into one folder. */
const traversal = [
  '..',
  `../${stem}`,
  `${stem}/b`,
  '/etc',
  '.',
  `./${stem}`,
  `${stem}/../..`,
  '%2E%2E',
  `signal@${stem}`,
  `${stem}\\..\\x`,
  `~${stem}`,
  ' ',
  `-${stem}`,
];
/** What the generic adapter refuses as a path: ".", ".." or a slash (core's platform-adapter.ts). */
const readsAsPath = (id: string): boolean => id === '.' || id === '..' || /[/\\]/.test(id);
const caseAndFolding = [stem, stem.toUpperCase(), `${stem}-cd`, `${stem}_cd`, `${stem}.cd`, `${stem}%2Dcd`, `${stem}é`, `${stem}e\u0301`, `${stem}ß`];

beforeAll(async () => {
  mkdirSync(sandboxDir, { recursive: true });
  before = listing(parent);
  gateway = await startAttackGateway({ sandboxDir });
});

afterAll(async () => {
  await gateway?.cleanup();
  await releaseDisksUnder(parent);
  rmSync(parent, { recursive: true, force: true });
});

/** Runs a marker command as each sender; returns each one's outcome. */
async function runAll(senders: readonly Sender[]): Promise<Array<{ sender: Sender; outcome: Awaited<ReturnType<AttackGateway['attempt']>> }>> {
  const outcomes = [];
  // Sequential: the point is the mapping, not concurrency (the storm case covers that).
  for (const sender of senders)
    outcomes.push({
      sender,
      outcome: await gateway.attempt(
        sender,
        `echo "mine=$(cat /workspace/owner 2>/dev/null)"; echo ${JSON.stringify(JSON.stringify(sender.userId))} > /workspace/owner`,
      ),
    });
  return outcomes;
}

describe('ids: hostile sender ids are refused or contained in their own folder', () => {
  it('path-traversal ids (.., ../x, a/b, /etc, .) are refused; escaped forms each get their own folder directly inside the root', async () => {
    const refused = await runAll(traversal.filter(readsAsPath).map((userId) => ({ platform: 'signal', userId })));
    for (const { sender, outcome } of refused) {
      expect(outcome, String(sender.userId)).toBeInstanceOf(IdentityError);
      expect((outcome as Error).message).toMatch(/reads as a path/);
    }
    const senders = traversal.filter((userId) => !readsAsPath(userId)).map((userId) => ({ platform: 'signal', userId }));
    for (const { sender, outcome } of await runAll(senders)) {
      expect({ id: sender.userId, error: outcome instanceof Error ? outcome.message : undefined }).toEqual({ id: sender.userId, error: undefined });
      const folder = gateway.folderOf(sender).folder;
      expect(path.dirname(folder)).toBe(path.join(sandboxDir, 'docker'));
      expect(path.basename(folder)).toMatch(/^signal@/);
    }
    // Second round: each id reads back only the marker it wrote itself.
    for (const { sender, outcome } of await runAll(senders)) {
      expect(outcome).toMatchObject({ output: `mine=${JSON.stringify(String(sender.userId))}\n` });
    }
  });

  it('ids that differ only by case, or by characters the folder or env form escapes, are distinct users with distinct folders, containers and env forms', async () => {
    const senders = caseAndFolding.map((userId) => ({ platform: 'signal', userId }));
    await runAll(senders);
    const second = await runAll(senders);
    for (const { sender, outcome } of second) expect(outcome).toMatchObject({ output: `mine=${JSON.stringify(String(sender.userId))}\n` });
    const folders = new Set(senders.map((sender) => gateway.folderOf(sender).folder.toLowerCase()));
    expect(folders.size).toBe(senders.length);
    const index = gateway.berth.resolver.index;
    const prefixes = new Set(senders.map((sender) => index.prefixFor(gateway.berth.resolver.registry.resolve(sender.platform, sender.userId))));
    expect(prefixes.size).toBe(senders.length);
    const containerIds = new Set(await Promise.all(senders.map(async (sender) => (await gateway.containerOf(sender))?.Id)));
    expect(containerIds.size).toBe(senders.length);
  });

  it("enormous (10 KB) and malformed ids (NUL, control, invisible, bidi-control and line-separator characters, lone surrogates) are refused with IdentityError, shown escaped; an empty id falls back to its chat's own sandbox", async () => {
    const refused = [
      'x'.repeat(10_240),
      `${stem}\u0000`,
      `\u0000`,
      `${stem}\n..`,
      `${stem}\ud800`,
      '\udfff',
      `${stem}\u001b[2J`,
      `${stem}\u202e`,
      `${stem}\u200f`,
      `${stem}\u200b`,
      `\ufeff${stem}`,
      `${stem}\u2028x`,
      `${stem}\u2029`,
      `${stem}\u2066`,
    ];
    for (const userId of refused) {
      for (const platform of ['signal', 'telegram', 'whatsapp']) {
        const outcome = await gateway.attempt({ platform, userId }, 'echo should-not-run');
        expect(outcome).toBeInstanceOf(IdentityError);
        const message = (outcome as Error).message;
        expect(message.split('\n')).toHaveLength(1);
        expect(message.length).toBeLessThan(400);
        expect(message).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
      }
    }
    // Telegram and WhatsApp refuse traversal ids outright.
    for (const [platform, userId] of [
      ['telegram', '../123'],
      ['telegram', '123/..'],
      ['whatsapp', '+1555/../1'],
      ['whatsapp', '..'],
    ] as const) {
      expect(await gateway.attempt({ platform, userId }, 'true')).toBeInstanceOf(IdentityError);
    }
    // Platform names are checked too: a traversal in the platform is no platform.
    expect(await gateway.attempt({ platform: '../etc', userId: '1' }, 'true')).toBeInstanceOf(IdentityError);
    // An empty sender id names nobody: the message (its chat is "chat") is a conversation without
    // a user, and gets that chat's own sandbox — not a user's, not the shared task sandbox.
    const empty = await gateway.run({ platform: 'signal', userId: '' }, 'pwd');
    expect(empty.returncode).toBe(0);
    const taskContainer = (await gateway.containers()).find((container) => container.Labels?.['dev.berth.kind'] === 'task');
    expect(taskContainer?.Labels?.['dev.berth.workspace']).toBe(path.join(sandboxDir, 'docker', 'task~chat%3Asignal%3Achat', 'workspace'));
  });

  it("afterwards nothing exists outside {sandbox_dir}/docker but each scope's disk image, and every container mounts only its own two folders (and its own channel folder, read-only)", async () => {
    const after = listing(parent).filter((entry) => !before.includes(entry));
    const root = path.join('gateway', 'sandboxes', 'docker');
    const disks = path.join('gateway', 'sandboxes', 'disks');
    const scopeFolders = new Set(readdirSync(path.join(parent, root)));
    for (const entry of after) {
      if (entry === root || entry.startsWith(root + path.sep)) continue;
      // The per-scope disks (container_disk): one owner-only image per scope folder, and the one
      // spare made ahead for the next new user (or one still being made), nothing else.
      if (entry === disks || entry === path.join(disks, 'docker')) continue;
      expect(path.dirname(entry), entry).toBe(path.join(disks, 'docker'));
      const spare = /^\.spare\.ext4(\.new-\d+-[0-9a-f]{8})?$/.test(path.basename(entry));
      expect(spare || (entry.endsWith('.ext4') && scopeFolders.has(path.basename(entry, '.ext4'))), entry).toBe(true);
      expect(statSync(path.join(parent, entry)).mode & 0o777).toBe(0o600);
    }
    // Directly inside the root: one folder per scope, each with exactly the workspace and home
    // folders, beside which Berth may keep only its own `.berth-*` bookkeeping files.
    for (const item of readdirSync(path.join(parent, root), { withFileTypes: true })) {
      if (!item.isDirectory()) {
        // Beside the scope folders, only the installation key that names sandboxes, owner-only.
        expect(item.name).toBe('.berth-installation-key');
        expect(statSync(path.join(parent, root, item.name)).mode & 0o777).toBe(0o600);
        continue;
      }
      if (item.name === '.berth-locks') {
        // Each scope's lock file (an empty file flock'ed by whoever changes its host files), owner-only.
        for (const lock of readdirSync(path.join(parent, root, item.name), { withFileTypes: true })) {
          expect(lock.isFile() && lock.name.endsWith('.lock') && scopeFolders.has(lock.name.slice(0, -'.lock'.length)), lock.name).toBe(true);
          expect(statSync(path.join(parent, root, item.name, lock.name)).mode & 0o777).toBe(0o600);
        }
        continue;
      }
      // The processes that hold the shared bound (bound-keeper.ts): empty owner-only files named by a process identity.
      if (item.name === '.berth-bound-holders') {
        for (const holder of readdirSync(path.join(parent, root, item.name), { withFileTypes: true })) {
          expect(holder.isFile() && /^[0-9a-f]*\.\d*\.\d+\.\d*$/.test(holder.name), holder.name).toBe(true);
          expect(statSync(path.join(parent, root, item.name, holder.name)).size).toBe(0);
          expect(statSync(path.join(parent, root, item.name, holder.name)).mode & 0o777).toBe(0o600);
        }
        continue;
      }
      // Purges in progress: none here.
      if (item.name === '.berth-purge') {
        expect(readdirSync(path.join(parent, root, item.name))).toEqual([]);
        continue;
      }
      const folder = item.name;
      const entries = readdirSync(path.join(parent, root, folder), { withFileTypes: true });
      // The channel folder holds only FIFOs: the launch FIFO, and a channel's three for the moment it takes to start.
      expect(
        entries
          .filter((entry) => entry.isDirectory())
          .map((entry) => entry.name)
          .sort(),
      ).toEqual(['.berth-channels', 'home', 'workspace']);
      for (const entry of entries.filter((candidate) => !candidate.isDirectory()))
        expect({ name: entry.name, file: entry.isFile() }).toEqual({ name: expect.stringMatching(/^\.berth-/), file: true });
      for (const entry of readdirSync(path.join(parent, root, folder, '.berth-channels'), { withFileTypes: true }))
        expect({ name: entry.name, fifo: entry.isFIFO() }).toEqual({ name: expect.stringMatching(/^(launch|[0-9a-f]{16}\.(in|out|err))$/), fifo: true });
    }
    for (const container of await gateway.containers()) {
      const info = await docker.getContainer(container.Id).inspect();
      const folder = path.dirname(info.Config.Labels['dev.berth.workspace'] ?? '');
      expect(path.dirname(folder)).toBe(path.join(sandboxDir, 'docker'));
      // Its own workspace and home, and its own channel folder read-only: nothing of anyone else's.
      const mounts = info.Mounts.map((mount) => ({ source: mount.Source, target: mount.Destination, writable: mount.RW })).sort((a, b) =>
        a.target.localeCompare(b.target),
      );
      expect(mounts).toEqual([
        { source: path.join(folder, 'home'), target: '/root', writable: true },
        { source: path.join(folder, '.berth-channels'), target: '/run/berth', writable: false },
        { source: path.join(folder, 'workspace'), target: '/workspace', writable: true },
      ]);
    }
  });
});
