import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ATTACK_IMAGE, assertEngineReady, containersUnder, randomTelegramUser, temporarySandboxDir, within } from './support/attack-gateway.js';
import { clearChildGateways, startChildGateway } from './support/child-gateway.js';

// The gateway as a child process with a warm pool (docker_pool_size), killed with SIGKILL while
// new users' first commands are being handed pooled sandboxes, at several moments, then started
// again: every user's next command answers, in a sandbox that shows nothing of anyone else's,
// each user has one sandbox, and nothing of the killed gateways' pools is left.
const POOL = 3;
const sandboxDir = temporarySandboxDir('pool');
const config = { docker_image: ATTACK_IMAGE, sandbox_dir: sandboxDir, container_memory: 128, docker_pool_size: POOL, timeout: 60 };
const children: ChildProcessWithoutNullStreams[] = [];

afterAll(() => clearChildGateways(children, sandboxDir));

/** The pool's ready sandboxes on the engine: labelled as the pool's and still named as the pool's (a hand-over renames it). */
const readyInPool = async () =>
  (await containersUnder(sandboxDir)).filter(
    (container) => container.Labels['dev.berth.kind'] === 'pool' && /pool-[0-9a-f]{32}$/.test(container.Names[0] ?? '') && container.State === 'running',
  );

async function poolFull(): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await readyInPool()).length !== POOL) {
    if (Date.now() > deadline) {
      const seen = (await containersUnder(sandboxDir)).map((container) => `${container.Names[0]} ${container.Labels['dev.berth.kind']} ${container.State}`);
      throw new Error(`the pool did not hold ${POOL} ready sandboxes within 60 s: ${seen.join(', ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('faults: the gateway is killed with SIGKILL while it hands pooled sandboxes to new users', () => {
  it('started again, it clears what the killed one left: each user has one sandbox with only their own files, and the pool holds exactly its size', async () => {
    await assertEngineReady();
    const users: Array<{ platform: string; userId: string | number; marker: string }> = [];
    for (const killAfterMs of [0, 30, 120, 400]) {
      const gateway = await startChildGateway(config, children);
      await poolFull();
      const round = Array.from({ length: POOL + 2 }, () => ({ ...randomTelegramUser(), marker: randomBytes(6).toString('hex') }));
      users.push(...round);
      for (const user of round) void gateway.send({ platform: user.platform, userId: user.userId, command: `echo ${user.marker} > /workspace/m` });
      await new Promise((resolve) => setTimeout(resolve, killAfterMs));
      await gateway.kill();
    }
    const gateway = await startChildGateway(config, children);
    const answers = await within(
      120_000,
      'the restarted gateway answering every user',
      Promise.all(
        users.map((user) => gateway.send({ platform: user.platform, userId: user.userId, command: 'ls -A /workspace; cat /workspace/m 2>/dev/null; true' })),
      ),
    );
    for (const [index, answer] of answers.entries()) {
      const user = users[index]!;
      expect(answer, `user ${index}`).toMatchObject({ returncode: 0 });
      // Either their first command ran (their marker, and nothing else) or it did not (an empty workspace).
      expect([`m\n${user.marker}\n`, ''], `user ${index} sees only their own files`).toContain(answer.output);
    }
    await poolFull();
    // One sandbox per user (each answered), the pool's own, and nothing else: no duplicates, no leftovers.
    const all = await containersUnder(sandboxDir);
    expect(all.length, 'containers under the sandbox root').toBe(users.length + POOL);
    expect(all.filter((container) => container.State !== 'running')).toEqual([]);
    await gateway.kill();
  }, 300_000);
});
