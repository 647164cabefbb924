import { ImageNotFoundError } from '@berth/core';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTACK_IMAGE,
  docker,
  randomTelegramUser,
  randomWhatsAppUser,
  startAttackGateway,
  thaw,
  timed,
  within,
  type AttackGateway,
} from './support/attack-gateway.js';

// Faults injected from outside (as an operator or a crash would) under a live session: the
// next command must work and the user's files must be intact.
const user = randomTelegramUser();
const marker = randomBytes(8).toString('hex');
let gateway: AttackGateway;

async function containerId(): Promise<string> {
  const container = await gateway.containerOf(user);
  expect(container).toBeDefined();
  return container!.Id;
}

async function filesIntact(): Promise<void> {
  // The command's own timeout is 20 s; 40 s without an answer means it hangs.
  const { value, ms } = await within(
    40_000,
    'the first command after the fault',
    timed(() => gateway.run(user, 'cat /workspace/keep /root/keep; echo "cd=$(pwd)"', { timeout: 20 })),
  );
  expect(value).toEqual({ output: `${marker}\n${marker}\ncd=/workspace\n`, returncode: 0 });
  console.log(`first command after the fault: ${Math.round(ms)} ms`);
}

beforeAll(async () => {
  gateway = await startAttackGateway();
  const setup = await gateway.run(user, `echo ${marker} > /workspace/keep && echo ${marker} > /root/keep && echo ok`);
  expect(setup.output).toBe('ok\n');
});

afterAll(async () => {
  await gateway?.cleanup();
});

describe('faults: the container goes away or freezes under a live session', () => {
  it('removed (docker rm -f): the next command recreates it, files intact', async () => {
    const before = await containerId();
    await docker.getContainer(before).remove({ force: true });
    await filesIntact();
    expect(await containerId()).not.toBe(before);
    expect(await gateway.containers()).toHaveLength(1);
  });

  it('killed (docker kill): the next command restarts it, files intact', async () => {
    const before = await containerId();
    await docker.getContainer(before).kill();
    await filesIntact();
    expect(await containerId()).toBe(before);
  });

  it('paused (docker pause): the next command runs, files intact', async () => {
    const before = await containerId();
    await docker.getContainer(before).pause();
    try {
      await filesIntact();
    } finally {
      await thaw(before);
    }
    expect((await docker.getContainer(before).inspect()).State.Paused).toBe(false);
  });
});

describe('faults: the image is deleted while sandboxes exist', () => {
  const image = `localhost/berth-attack-${randomBytes(4).toString('hex')}:latest`;
  const early = randomWhatsAppUser();
  const late = randomWhatsAppUser();
  let imageGateway: AttackGateway | undefined;

  afterAll(async () => {
    await imageGateway?.cleanup();
    await docker
      .getImage(image)
      .remove({ force: true })
      .catch(() => undefined);
  });

  it("running sandboxes keep working; a new user's first command gets ImageNotFoundError naming the image", async () => {
    const [repo, tag] = [image.slice(0, image.lastIndexOf(':')), 'latest'];
    await docker.getImage(ATTACK_IMAGE).tag({ repo, tag });
    imageGateway = await startAttackGateway({ config: { docker_image: image } });
    expect((await imageGateway.run(early, 'echo before > /workspace/f; cat /workspace/f')).output).toBe('before\n');
    await docker.getImage(image).remove({ force: true });
    await expect(docker.getImage(image).inspect()).rejects.toThrow();
    expect(await imageGateway.run(early, 'cat /workspace/f; echo after')).toEqual({ output: 'before\nafter\n', returncode: 0 });
    const refused = await imageGateway.attempt(late, 'echo should-not-run');
    expect(refused).toBeInstanceOf(ImageNotFoundError);
    expect((refused as ImageNotFoundError).image).toBe(image);
    expect((refused as Error).message).toContain(image);
    expect((refused as Error).message.split('\n')).toHaveLength(1);
    expect(await imageGateway.containerOf(late)).toBeUndefined();
  });
});
