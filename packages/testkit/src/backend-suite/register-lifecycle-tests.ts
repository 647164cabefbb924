import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver } from '@berth/core';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';
import { shellQuote } from './shell-quote.js';

/** Registers the lifecycle tests: recreation after removal, adoption, idle stop and restart, purge. */
export function registerLifecycleTests(fixture: BackendFixture): void {
  describe('lifecycle', () => {
    it('a container removed under a live session is recreated on the next command, with the files intact', { timeout: TEST_TIMEOUT_MS }, async () => {
      const tag = `keep-${fixture.runId}`;
      expect(await fixture.run('dave', `echo work-${tag} > /workspace/${tag}.txt && echo home-${tag} > /root/${tag}.txt`)).toMatchObject({ exitCode: 0 });
      const before = await fixture.containerOf('dave');
      await fixture.engine.removeContainer(before);
      const after = await fixture.run('dave', `cat /workspace/${tag}.txt /root/${tag}.txt`);
      expect(after).toMatchObject({ exitCode: 0, stdout: `work-${tag}\nhome-${tag}\n` });
      const entries = await fixture.entriesOf('dave');
      expect(entries).toHaveLength(1);
      expect(entries[0]!.containerId).not.toBe(before);
    });

    describe.skipIf(fixture.declaredOff('adoption'))('adoption', () => {
      it('a second backend instance (a restarted gateway) adopts the running sandbox instead of making another', {
        timeout: TEST_TIMEOUT_MS,
      }, async (context) => {
        await fixture.requireCapability(context, 'adoption');
        const tag = `adopt-${fixture.runId}`;
        expect(await fixture.run('alice', `echo ${tag} > /workspace/${tag}.txt`)).toMatchObject({ exitCode: 0 });
        const original = await fixture.containerOf('alice');
        const restarted = await fixture.options.create(fixture.config('main'));
        try {
          const alice = fixture.user('alice').request;
          expect(await restarted.doExec(alice, { command: `cat /workspace/${tag}.txt` })).toMatchObject({ exitCode: 0, stdout: `${tag}\n` });
          const entries = (await restarted.list()).filter((entry) => entry.scopeKey === alice.scope.key);
          expect(entries.map((entry) => entry.containerId)).toEqual([original]);
        } finally {
          await restarted.close();
        }
      });
    });

    describe.skipIf(fixture.declaredOff('idleStop'))('idle stop', () => {
      it('with lifetime_seconds 1, the backend stops an idle sandbox by itself, and the next command restarts it with its files', {
        timeout: TEST_TIMEOUT_MS,
      }, async (context) => {
        await fixture.requireCapability(context, 'idleStop');
        const tag = `idle-${fixture.runId}`;
        expect(await fixture.run('erin', `echo ${tag} > /workspace/${tag}.txt`)).toMatchObject({ exitCode: 0 });
        expect((await fixture.entriesOf('erin'))[0]?.state).toBe('running');
        // What a user notices: some seconds after the last command, the sandbox is stopped.
        const deadline = Date.now() + 20_000;
        let state = (await fixture.entriesOf('erin'))[0]?.state;
        while (state !== 'stopped' && Date.now() < deadline) {
          await sleep(250);
          state = (await fixture.entriesOf('erin'))[0]?.state;
        }
        expect(state, 'stopped within 20 s of its last command (lifetime_seconds 1)').toBe('stopped');
        expect(await fixture.run('erin', `cat /workspace/${tag}.txt`)).toMatchObject({ exitCode: 0, stdout: `${tag}\n` });
        expect((await fixture.entriesOf('erin'))[0]?.state).toBe('running');
      });

      it("a backend of another installation on the same engine, made without a sandbox root and reaping every second, stops only its own sandboxes, never this one's", {
        timeout: TEST_TIMEOUT_MS,
      }, async (context) => {
        await fixture.requireCapability(context, 'idleStop');
        const registry = createPlatformRegistry();
        const randomUser = () => ({ platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) });
        // This installation's reaping backend adopts what runs at its first reap, once: done now
        // (where the backend has a reap to call), so that the sandbox below is only the main backend's.
        await ((await fixture.backend('idle')) as { reap?: () => Promise<unknown> }).reap?.();
        const main = await fixture.backend('main');
        const mine = createSandboxResolver({ config: fixture.config('main'), registry }).resolve({ session: randomUser() });
        expect(await main.doExec(mine, { command: 'echo kept > /workspace/kept' })).toMatchObject({ exitCode: 0 });
        const mineNow = async () => (await main.list()).find((entry) => entry.scopeKey === mine.scope.key);
        const container = (await mineNow())?.containerId;
        // Another gateway's folder, and its backend as a library user makes one: settings only.
        const otherDir = await mkdtemp(path.join(tmpdir(), `berth-testkit-neighbour-${fixture.runId}-`));
        const config = { ...fixture.config('idle'), sandbox_dir: otherDir };
        const neighbour = await fixture.options.create(config);
        const theirs = createSandboxResolver({ config, registry }).resolve({ session: randomUser() });
        try {
          expect(await neighbour.doExec(theirs, { command: 'echo theirs' })).toMatchObject({ exitCode: 0, stdout: 'theirs\n' });
          // Its reaper works: its own sandbox stops once idle (lifetime_seconds 1).
          const own = async () => (await neighbour.list()).find((entry) => entry.scopeKey === theirs.scope.key)?.state;
          const deadline = Date.now() + 20_000;
          while ((await own()) !== 'stopped' && Date.now() < deadline) await sleep(250);
          expect(await own(), "the neighbour's own sandbox, stopped by its reaper").toBe('stopped');
          // It never listed this installation's sandboxes, and left this one running.
          expect((await neighbour.list()).map((entry) => entry.scopeKey)).toEqual([theirs.scope.key]);
          expect(await mineNow()).toMatchObject({ containerId: container, state: 'running' });
          expect(await main.doExec(mine, { command: 'cat /workspace/kept' })).toMatchObject({ exitCode: 0, stdout: 'kept\n' });
          expect((await mineNow())?.containerId).toBe(container);
        } finally {
          await neighbour.remove(theirs.scope.key, { purge: true, paths: theirs.paths }).catch(() => undefined);
          await neighbour.close();
          await main.remove(mine.scope.key, { purge: true, paths: mine.paths }).catch(() => undefined);
          await rm(otherDir, { recursive: true, force: true });
        }
      });
    });

    it("purge deletes the scope's workspace and home, and nothing that a planted symlink points to", { timeout: TEST_TIMEOUT_MS }, async () => {
      const tag = `purge-${fixture.runId}`;
      // Targets: a file of another user, and a host folder outside sandbox_dir.
      expect(await fixture.run('alice', `echo alice-${tag} > /workspace/${tag}.txt`)).toMatchObject({ exitCode: 0 });
      const aliceFile = path.join(fixture.user('alice').request.paths.workspace, `${tag}.txt`);
      const outside = path.join(fixture.outsideDir, tag);
      await mkdir(outside, { recursive: true });
      await writeFile(path.join(outside, 'precious.txt'), `precious-${tag}\n`);

      const links = [
        `ln -s ${shellQuote(aliceFile)} /workspace/link-to-file`,
        `ln -s ${shellQuote(outside)} /workspace/link-to-folder`,
        `ln -s ${shellQuote(outside)} /root/link-to-folder`,
        `mkdir -p /workspace/deep/er && ln -s ${shellQuote(outside)} /workspace/deep/er/link`,
        `ln -s ${shellQuote(path.dirname(aliceFile))} /root/link-to-alice-workspace`,
        `echo frank > /workspace/own.txt && echo frank > /root/own.txt`,
      ];
      expect(await fixture.run('frank', links.join(' && '))).toMatchObject({ exitCode: 0 });
      const frank = fixture.user('frank').request;

      const hostFolders = await fixture.has('hostFolders');
      if (hostFolders) expect(existsSync(path.join(frank.paths.workspace, 'own.txt'))).toBe(true);

      const backend = await fixture.backend('main');
      await backend.remove(frank.scope.key, { purge: true, paths: frank.paths });
      fixture.markRemoved('frank');

      if (hostFolders) {
        expect(existsSync(frank.paths.workspace), `${frank.paths.workspace} is gone`).toBe(false);
        expect(existsSync(frank.paths.home), `${frank.paths.home} is gone`).toBe(false);
      } else {
        // Files kept elsewhere (a claim): what the user notices is a fresh, empty sandbox.
        expect(await fixture.entriesOf('frank')).toEqual([]);
        const fresh = await fixture.run('frank', 'ls -A /workspace /root');
        expect(fresh.exitCode).toBe(0);
        expect(fresh.stdout).not.toMatch(/own\.txt|link-to|deep/);
        await backend.remove(frank.scope.key, { purge: true, paths: frank.paths });
      }
      expect(await fixture.entriesOf('frank')).toEqual([]);
      if (hostFolders) expect(await readFile(aliceFile, 'utf8')).toBe(`alice-${tag}\n`);
      expect(await readFile(path.join(outside, 'precious.txt'), 'utf8')).toBe(`precious-${tag}\n`);
      expect(await fixture.run('alice', `cat /workspace/${tag}.txt`)).toMatchObject({ exitCode: 0, stdout: `alice-${tag}\n` });
    });
  });
}
