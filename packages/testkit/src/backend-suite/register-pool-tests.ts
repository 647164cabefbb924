import { randomInt } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPlatformRegistry, createSandboxResolver, sandboxRootOf, type SandboxBackend, type SandboxRequest, type TerminalConfig } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';

/** What a backend with a warm pool offers besides the contract (the Berth runtime's). */
interface PooledBackend extends SandboxBackend {
  warm(root?: string): Promise<void>;
  readonly driver: { list(labels: Record<string, string>): Promise<Array<{ id: string; name: string; state: string; labels: Record<string, string> }>> };
}

const POOL_SIZE = 2;

/**
 * Registers the warm pool's tests (`docker_pool_size`): a new user's first command is served by
 * a pooled sandbox that held nothing of anyone's, renamed theirs, with their files where theirs
 * belong; more new users at once than the pool holds each get their own; two first messages of
 * one user get one sandbox; a restarted gateway adopts a handed-over sandbox; one stopped is made
 * anew with the files kept. Skipped (with the reason) for a backend without a pool.
 */
export function registerPoolTests(fixture: BackendFixture): void {
  describe('warm pool', () => {
    const registry = createPlatformRegistry();
    const backends: PooledBackend[] = [];
    const pooledBackend = async (context: { skip(note?: string): void }): Promise<{ backend: PooledBackend; config: TerminalConfig }> => {
      const config = { ...fixture.config('main'), docker_pool_size: POOL_SIZE };
      const backend = (await fixture.options.create(config)) as PooledBackend;
      backends.push(backend);
      if (typeof backend.warm !== 'function' || !backend.capabilities.hostFolders) {
        context.skip('the backend keeps no warm pool (it needs the Berth runtime over a driver with host folders)');
      }
      await backend.warm(sandboxRootOf(config.sandbox_dir!));
      return { backend, config };
    };
    const newUser = (config: TerminalConfig): SandboxRequest =>
      createSandboxResolver({ config, registry }).resolve({ session: { platform: 'telegram', userId: String(randomInt(1_000_000_000, 2_000_000_000)) } });
    /**
     * The pool's sandboxes on the engine not handed to anyone: labelled as the pool's (as every
     * pooled one stays on the engine) and still named as the pool's (a hand-over renames it).
     */
    const ready = async (backend: PooledBackend): Promise<string[]> =>
      (await backend.driver.list({ 'dev.berth.managed-by': 'berth', 'dev.berth.kind': 'pool' }))
        .filter((sandbox) => (sandbox.labels['dev.berth.workspace'] ?? '').startsWith(`${fixture.sandboxDir}${path.sep}`))
        .filter((sandbox) => /pool-[0-9a-f]{32}$/.test(sandbox.name))
        .filter((sandbox) => sandbox.state === 'running')
        .map((sandbox) => sandbox.id);
    const until = async (what: string, check: () => Promise<boolean>): Promise<void> => {
      const deadline = Date.now() + 40_000;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`${what} did not happen within 40 s`);
        await sleep(200);
      }
    };
    const close = async (backend: PooledBackend): Promise<void> => {
      backends.splice(backends.indexOf(backend), 1);
      await backend.close();
    };

    it('a new user gets a pooled sandbox that held nothing of anyone, becomes theirs, and the pool fills again', {
      timeout: TEST_TIMEOUT_MS,
    }, async (context) => {
      const { backend, config } = await pooledBackend(context);
      try {
        const before = await ready(backend);
        expect(before.length).toBeGreaterThanOrEqual(1);
        const user = newUser(config);
        const first = await backend.doExec(user, { command: 'ls -A /workspace /root; echo mine > /workspace/f' });
        expect(first).toMatchObject({ exitCode: 0, stdout: '/root:\n\n/workspace:\n' });
        const [entry] = (await backend.list()).filter((one) => one.scopeKey === user.scope.key);
        expect(entry).toMatchObject({ state: 'running', kind: 'user', workspace: user.paths.workspace });
        expect(before, 'the sandbox came from the pool').toContain(entry!.containerId);
        // The file is in the user's own folder on the host, where theirs belong.
        expect(readFileSync(path.join(user.paths.workspace, 'f'), 'utf8')).toBe('mine\n');
        expect(await ready(backend)).not.toContain(entry!.containerId);
        await until('the pool filling again', async () => (await ready(backend)).length === POOL_SIZE);
      } finally {
        await close(backend);
      }
    });

    it('a pooled sandbox is held to what a sandbox made for its user is: capabilities, no new privileges, pids, memory, a read-only root', {
      timeout: TEST_TIMEOUT_MS,
    }, async (context) => {
      const { backend, config } = await pooledBackend(context);
      try {
        const before = await ready(backend);
        const user = newUser(config);
        // The same look from inside both: whatever the cgroup version or the runtime, the two must agree.
        const look =
          "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status; " +
          'cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max; ' +
          'cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; ' +
          '(touch /berth-root-probe 2>/dev/null && echo root-writable) || echo root-read-only';
        const pooled = await backend.doExec(user, { command: look });
        expect(before, 'the sandbox came from the pool').toContain((await backend.list()).find((one) => one.scopeKey === user.scope.key)?.containerId);
        const made = await fixture.run('alice', look);
        expect(pooled).toMatchObject({ exitCode: 0 });
        expect(pooled.stdout).toContain('root-read-only');
        expect(pooled.stdout).toBe(made.stdout);
      } finally {
        await close(backend);
      }
    });

    it('more new users at once than the pool holds each get a sandbox of their own; two first messages of one user get one', {
      timeout: TEST_TIMEOUT_MS * 2,
    }, async (context) => {
      const { backend, config } = await pooledBackend(context);
      try {
        const users = Array.from({ length: POOL_SIZE + 3 }, () => newUser(config));
        const twice = [...users, users[0]!];
        const results = await Promise.all(
          twice.map((user, index) => backend.doExec(user, { command: `echo ${index} > /workspace/m-${index}; sleep 0.2; ls /workspace | sort` })),
        );
        const listed = await backend.list();
        for (const [index, user] of users.entries()) {
          const own = index === 0 ? `m-0\nm-${users.length}\n` : `m-${index}\n`;
          expect(results[index], `user ${index} sees their own files only`).toMatchObject({ exitCode: 0 });
          expect(results[index]!.stdout.split('\n').every((line) => line === '' || own.includes(`${line}\n`))).toBe(true);
          expect(readFileSync(path.join(user.paths.workspace, `m-${index}`), 'utf8')).toBe(`${index}\n`);
          expect(
            listed.filter((one) => one.scopeKey === user.scope.key),
            `user ${index} has one sandbox`,
          ).toHaveLength(1);
        }
        expect(new Set(listed.filter((one) => users.some((user) => user.scope.key === one.scopeKey)).map((one) => one.containerId)).size).toBe(users.length);
      } finally {
        await close(backend);
      }
    });

    it('a restarted gateway adopts a handed-over sandbox; stopped, it is made anew with the files kept, and leaves nothing of the pool behind', {
      timeout: TEST_TIMEOUT_MS * 2,
    }, async (context) => {
      const first = await pooledBackend(context);
      const user = newUser(first.config);
      const pooled = await ready(first.backend);
      expect(await first.backend.doExec(user, { command: 'echo kept > /workspace/k; echo home > /root/h' })).toMatchObject({ exitCode: 0 });
      const handed = (await first.backend.list()).find((one) => one.scopeKey === user.scope.key)!.containerId;
      expect(pooled).toContain(handed);
      await close(first.backend);
      // Its ready sandboxes went with it; the handed-over one stays, its user's.
      expect(await ready(first.backend)).toEqual([]);
      const again = await pooledBackend(context);
      try {
        expect(await again.backend.doExec(user, { command: 'cat /workspace/k /root/h' })).toMatchObject({ exitCode: 0, stdout: 'kept\nhome\n' });
        expect((await again.backend.list()).filter((one) => one.scopeKey === user.scope.key).map((one) => one.containerId)).toEqual([handed]);
        await (again.backend as unknown as { stop(scopeKey: string): Promise<void> }).stop(user.scope.key);
        expect(await again.backend.doExec(user, { command: 'cat /workspace/k /root/h' })).toMatchObject({ exitCode: 0, stdout: 'kept\nhome\n' });
        const now = (await again.backend.list()).filter((one) => one.scopeKey === user.scope.key);
        expect(now).toHaveLength(1);
        expect(now[0]!.containerId, 'a stopped pooled sandbox is never started again').not.toBe(handed);
        expect(existsSync(path.join(user.paths.workspace, 'k'))).toBe(true);
      } finally {
        await close(again.backend);
      }
      for (const backend of backends.splice(0)) await backend.close().catch(() => undefined);
    });
  });
}
