import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './testing/integration-harness.js';

describe('last use across gateway processes', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness();
  });
  afterAll(async () => harness?.cleanup());

  it('a new backend (a restarted gateway, or berth ls) sees when a sandbox was last used, and reaps it by that', async () => {
    const request = harness.request({ platform: 'telegram', userId: '31337' });
    const first = harness.backend({ lifetime_seconds: 3600 });
    const before = Date.now();
    expect((await first.doExec(request, { command: 'true' })).exitCode).toBe(0);
    await first.close();

    const second = harness.backend({ lifetime_seconds: 3600 });
    const [info] = (await second.list()).filter((sandbox) => sandbox.scopeKey === request.scope.key);
    expect(info?.lastUsed).toBeDefined();
    const lastUsed = Date.parse(info!.lastUsed!);
    expect(lastUsed).toBeGreaterThanOrEqual(before - 1000);
    expect(lastUsed).toBeLessThanOrEqual(Date.now());
    await second.close();

    // Recorded, not made up: after a restart, a sandbox idle for longer than the lifetime is
    // stopped at once (an unknown last use would give it a full lifetime from the restart).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const third = harness.backend({ lifetime_seconds: 2, docker_freeze_seconds: 0 });
    expect(await third.reap()).toContain(request.scope.key);
    const [stopped] = (await third.list()).filter((sandbox) => sandbox.scopeKey === request.scope.key);
    expect(stopped?.state).toBe('stopped');
    expect((await third.doExec(request, { command: 'echo back' })).stdout).toBe('back\n');
    await third.close();
  });
});
