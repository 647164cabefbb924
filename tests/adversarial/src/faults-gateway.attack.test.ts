import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ATTACK_IMAGE, assertEngineReady, containersUnder, docker, randomTelegramUser, temporarySandboxDir, within } from './support/attack-gateway.js';
import { clearChildGateways, startChildGateway } from './support/child-gateway.js';

// The gateway as a child process, killed with SIGKILL in the middle of a command and started
// again: it must adopt the existing sandbox (same container), make no duplicate, and its reaper
// must then stop it, leaving nothing running behind.
const sandboxDir = temporarySandboxDir('child');
const config = { docker_image: ATTACK_IMAGE, sandbox_dir: sandboxDir, container_memory: 128, lifetime_seconds: 2, docker_freeze_seconds: 2, timeout: 120 };
const user = randomTelegramUser();
const marker = randomBytes(8).toString('hex');
const children: ChildProcessWithoutNullStreams[] = [];

afterAll(() => clearChildGateways(children, sandboxDir));

describe('faults: the gateway process is killed with SIGKILL mid-command and started again', () => {
  it('adopts the existing sandbox (same container id), makes no duplicate, and reaps it afterwards with nothing left running', async () => {
    await assertEngineReady();
    const first = await startChildGateway(config, children);
    const setup = await first.send({ ...user, command: `echo ${marker} > /workspace/keep; echo ok` });
    expect(setup).toMatchObject({ output: 'ok\n', returncode: 0 });
    const [original] = await containersUnder(sandboxDir);
    expect(original).toBeDefined();

    // Mid-command: the command is running inside the sandbox when the gateway dies.
    void first.send({ ...user, command: 'sleep 60; echo finished' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const top = (await docker.getContainer(original!.Id).top({ ps_args: '-o pid,args' })) as { Processes?: string[][] };
    expect(top.Processes?.some((row) => row.join(' ').includes('sleep 60'))).toBe(true);
    first.process.kill('SIGKILL');
    await new Promise((resolve) => first.process.once('exit', resolve));

    const second = await startChildGateway(config, children);
    const again = await within(30_000, 'the first command of the restarted gateway', second.send({ ...user, command: 'cat /workspace/keep' }));
    expect(again).toMatchObject({ output: `${marker}\n`, returncode: 0 });
    const after = await containersUnder(sandboxDir);
    expect(after.map((container) => container.Id)).toEqual([original!.Id]);

    // Idle past lifetime_seconds: the restarted gateway's reaper freezes the adopted sandbox, and
    // stops it once frozen for docker_freeze_seconds, which ends the killed gateway's orphaned
    // command too.
    const deadline = Date.now() + 20_000;
    let state = '';
    while (Date.now() < deadline) {
      state = (await docker.getContainer(original!.Id).inspect()).State.Status;
      if (state === 'exited') break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(state).toBe('exited');
    expect((await containersUnder(sandboxDir)).filter((container) => container.State === 'running')).toEqual([]);
    second.process.kill('SIGKILL');
  });
});
