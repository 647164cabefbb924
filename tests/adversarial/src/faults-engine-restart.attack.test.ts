import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, randomTelegramUser, startAttackGateway, within, type AttackGateway } from './support/attack-gateway.js';

// The Docker daemon restarted between two commands and in the middle of one. Restarting dockerd
// stops every container on the machine, so these cases wait until no other package's vitest is
// running (in CI this suite runs alone, after the others).
const user = randomTelegramUser();
const marker = randomBytes(8).toString('hex');
let gateway: AttackGateway;

/** Vitest processes of other packages: those whose working folder is not this package's. */
function foreignVitest(): number[] {
  const own = process.cwd();
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!commandLine.includes('vitest')) continue;
      if (readlinkSync(`/proc/${entry}/cwd`) !== own) found.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

async function waitForExclusiveEngine(): Promise<void> {
  const deadline = Date.now() + 240_000;
  while (foreignVitest().length > 0) {
    if (Date.now() > deadline)
      throw new Error(`other test runs (pids ${foreignVitest().join(', ')}) kept using the engine for 4 minutes; run the attack suite alone`);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
}

/** SIGTERM to dockerd, wait for it to exit, start it again, wait until it answers a ping. */
async function restartDockerd(): Promise<number> {
  const started = Date.now();
  const pid = Number(execFileSync('pgrep', ['-xo', 'dockerd'], { encoding: 'utf8' }).trim());
  expect(pid).toBeGreaterThan(0);
  process.kill(pid, 'SIGTERM');
  while (Date.now() - started < 60_000) {
    try {
      process.kill(pid, 0);
      await new Promise((resolve) => setTimeout(resolve, 200));
    } catch {
      break;
    }
  }
  spawn('sh', ['-c', 'nohup dockerd >>/var/log/berth-dockerd.log 2>&1 &'], { detached: true, stdio: 'ignore' }).unref();
  while (Date.now() - started < 120_000) {
    try {
      await docker.ping();
      return Date.now() - started;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
  throw new Error('dockerd did not answer within 120 s after the restart; see /var/log/berth-dockerd.log');
}

beforeAll(async () => {
  await waitForExclusiveEngine();
  gateway = await startAttackGateway();
  expect((await gateway.run(user, `echo ${marker} > /workspace/keep; echo ok`)).output).toBe('ok\n');
}, 300_000);

afterAll(async () => {
  await gateway?.cleanup();
});

describe('faults: the engine daemon restarts', () => {
  it('between commands: the next command brings the sandbox back, files intact', async () => {
    const restartMs = await restartDockerd();
    const after = await within(60_000, 'the first command after the engine restart', gateway.run(user, 'cat /workspace/keep'));
    expect(after).toEqual({ output: `${marker}\n`, returncode: 0 });
    console.log(`engine restart took ${restartMs} ms`);
  }, 240_000);

  it('mid-command: the running command settles (an error or a non-zero exit, no hang), then the next command works, files intact', async () => {
    const running = gateway.attempt(user, 'sleep 60; echo finished', { timeout: 90 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await restartDockerd();
    const outcome = await within(60_000, 'the command cut by the engine restart', running);
    expect(outcome instanceof Error ? outcome.message : outcome.output).not.toContain('finished');
    if (outcome instanceof Error) expect(outcome.message.split('\n')).toHaveLength(1);
    else expect(outcome.returncode).not.toBe(0);
    const after = await within(60_000, 'the first command after the engine restart', gateway.run(user, 'cat /workspace/keep'));
    expect(after).toEqual({ output: `${marker}\n`, returncode: 0 });
    expect(await gateway.containers()).toHaveLength(1);
  }, 240_000);

  it('while the sandbox is frozen (idle past lifetime_seconds): the next command thaws nothing stale, brings it back, files intact, no duplicate', async () => {
    const idle = await startAttackGateway({ config: { lifetime_seconds: 1 } });
    try {
      const frozenUser = randomTelegramUser();
      expect((await idle.run(frozenUser, `echo ${marker} > /workspace/keep; cd /tmp; echo ok`)).output).toBe('ok\n');
      // The reaper (every second here) freezes it: docker_freeze_seconds is on by default.
      const deadline = Date.now() + 30_000;
      while ((await idle.containerOf(frozenUser))?.State !== 'paused' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
      expect((await idle.containerOf(frozenUser))?.State).toBe('paused');
      await restartDockerd();
      const after = await within(60_000, 'the first command after the engine restart', idle.run(frozenUser, 'cat /workspace/keep'));
      expect(after).toEqual({ output: `${marker}\n`, returncode: 0 });
      expect(await idle.containers()).toHaveLength(1);
      expect((await idle.containerOf(frozenUser))?.State).toBe('running');
    } finally {
      await idle.cleanup();
    }
  }, 240_000);

  it('with a warm pool: a handed-over sandbox and the ready ones are stopped by the restart; the user keeps their files in a sandbox of their own, the next new user gets one, and the pool holds its size again', async () => {
    const pooled = await startAttackGateway({ config: { docker_pool_size: 2 } });
    /** The pool's ready sandboxes: labelled as the pool's, still named as the pool's (a hand-over renames it), running. */
    const ready = async () =>
      (await pooled.containers()).filter(
        (container) => container.Labels['dev.berth.kind'] === 'pool' && /pool-[0-9a-f]{32}$/.test(container.Names[0] ?? '') && container.State === 'running',
      );
    const full = async (): Promise<void> => {
      const deadline = Date.now() + 60_000;
      while ((await ready()).length < 2) {
        if (Date.now() > deadline) throw new Error('the pool did not hold 2 ready sandboxes within 60 s');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    try {
      await full();
      const first = randomTelegramUser();
      const before = new Set((await ready()).map((container) => container.Id));
      expect((await pooled.run(first, `echo ${marker} > /workspace/keep; echo ok`)).output).toBe('ok\n');
      const handed = (await pooled.containers()).find((container) => before.has(container.Id) && !/pool-[0-9a-f]{32}$/.test(container.Names[0] ?? ''));
      expect(handed, 'the first user was handed a pooled sandbox').toBeDefined();
      await restartDockerd();
      const after = await within(60_000, 'the first command after the engine restart', pooled.run(first, 'cat /workspace/keep'));
      expect(after).toEqual({ output: `${marker}\n`, returncode: 0 });
      const second = randomTelegramUser();
      expect(await within(60_000, "a new user's first command after the restart", pooled.run(second, 'ls -A /workspace /root'))).toEqual({
        output: '/root:\n\n/workspace:\n',
        returncode: 0,
      });
      await full();
      // The stopped pooled sandboxes go (never started again, removed in the background once
      // found stopped): then two users' sandboxes and the pool's two, all running.
      const settled = Date.now() + 30_000;
      let all = await pooled.containers();
      while (all.some((container) => container.State !== 'running') && Date.now() < settled) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        all = await pooled.containers();
      }
      expect(all.map((container) => container.Id)).not.toContain(handed!.Id);
      expect(all.filter((container) => container.State !== 'running')).toEqual([]);
      expect(all).toHaveLength(4);
    } finally {
      await pooled.cleanup();
    }
  }, 240_000);
});
