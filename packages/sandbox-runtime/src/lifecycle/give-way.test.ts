import { SandboxError } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { createFakeDriver } from '../testing/fake-driver.js';
import { createReclaim } from './give-way.js';

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
});
