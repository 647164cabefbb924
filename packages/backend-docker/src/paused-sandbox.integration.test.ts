import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './testing/integration-harness.js';

describe('a sandbox paused from outside', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness();
  });
  afterAll(async () => {
    // Never leave a frozen container behind: it would hold the engine's lock on it.
    for (const container of await harness.docker.listContainers({ all: true, filters: { label: [`dev.berth.test=${harness.runId}`] } })) {
      if (container.State === 'paused')
        await harness.docker
          .getContainer(container.Id)
          .unpause()
          .catch(() => undefined);
    }
    await harness?.cleanup();
  });

  it('answers the next command (unpaused) with files intact, even when paused right after the first command', async () => {
    const backend = harness.backend();
    const request = harness.request({ platform: 'telegram', userId: '5550001' });
    expect((await backend.doExec(request, { command: 'echo kept > /workspace/f' })).exitCode).toBe(0);
    const containerId = await backend.doAcquire(request);
    await harness.docker.getContainer(containerId).pause();
    const result = await Promise.race([
      backend.doExec(request, { command: 'cat /workspace/f', timeout: 20 }),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the command after a pause did not answer within 15 s')), 15_000)),
    ]);
    expect(result).toMatchObject({ exitCode: 0, stdout: 'kept\n', timedOut: false });
    expect((await harness.docker.getContainer(containerId).inspect()).State.Paused).toBe(false);
  });
});
