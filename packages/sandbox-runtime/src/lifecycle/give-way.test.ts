import { SandboxError } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { createFakeDriver } from '../testing/fake-driver.js';
import { createReclaim } from './give-way.js';
import { newEntry } from './sandbox-entry.js';

// How a sandbox gives way (give-way.ts), on the fake engine: what the guard learns when the
// engine cannot say whose container it is.
describe('createReclaim', () => {
  const reclaimOver = (driver: ReturnType<typeof createFakeDriver>) =>
    createReclaim({ driver, entries: () => [], dropShells: () => undefined, stopped: async () => undefined });

  it('rejects when the engine fails to answer, so the guard asks again, and kills nothing', async () => {
    const driver = createFakeDriver();
    driver.failNext('inspect', new SandboxError('ENGINE_ERROR', 'the engine did not answer in time'));
    let killed = false;
    await expect(
      reclaimOver(driver)('a'.repeat(64), 'why', async () => {
        killed = true;
      }),
    ).rejects.toThrow(/did not answer/);
    expect(killed).toBe(false);
  });

  it('answers false for a container that is not there (or not Berth’s): left out of later choices, nothing killed', async () => {
    const driver = createFakeDriver();
    let killed = false;
    expect(
      await reclaimOver(driver)('b'.repeat(64), 'why', async () => {
        killed = true;
      }),
    ).toBe(false);
    expect(killed).toBe(false);
  });

  it("kills a sandbox of this process's at once, before the engine says anything (it may not answer while the bound is full)", async () => {
    const driver = createFakeDriver();
    const id = 'c'.repeat(64);
    const entry = newEntry('user:telegram:1', { kind: 'user', platform: 'telegram', userId: '1' }, { name: 'berth-x', containerId: id, running: true });
    // An engine that never answers an inspect.
    driver.inspect = () => new Promise(() => undefined);
    let killed = false;
    const reclaim = createReclaim({ driver, entries: () => [entry], dropShells: () => undefined, stopped: async () => undefined });
    const answer = await reclaim(id, 'why', async () => {
      killed = true;
    });
    expect(killed).toBe(true);
    expect(answer).not.toBe(false);
    expect(entry.reclaimed).toBe('why');
    expect(entry.running).toBe(false);
  });

  it('gives up on an engine that does not say whose an unknown container is within 2 s, killing nothing', async () => {
    const driver = createFakeDriver();
    driver.inspect = () => new Promise(() => undefined);
    let killed = false;
    const started = Date.now();
    await expect(
      reclaimOver(driver)('d'.repeat(64), 'why', async () => {
        killed = true;
      }),
    ).rejects.toThrow(/did not say within 2000 ms/);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(killed).toBe(false);
  });
});
