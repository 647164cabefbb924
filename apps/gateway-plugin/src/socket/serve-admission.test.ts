import { describe, expect, it } from 'vitest';
import { createServeAdmission } from './serve-admission.js';

describe('createServeAdmission', () => {
  it('keeps a place for a sandbox that asks for little while a few others fill the waiting places', () => {
    const admission = createServeAdmission({ maxInFlight: 256, maxQueuedPerScope: 64, maxQueued: 1024 });
    // 16 greedy sandboxes: one running command and as many waiting as they are let have.
    const admitted = new Map<string, number>();
    for (let tenant = 0; tenant < 16; tenant++) {
      for (let request = 0; request < 100; request++) {
        if (admission.admit(`greedy-${tenant}`) === undefined) admitted.set(`greedy-${tenant}`, (admitted.get(`greedy-${tenant}`) ?? 0) + 1);
      }
    }
    expect([...admitted.values()].reduce((sum, count) => sum + count, 0)).toBe(16 + 1024);
    // A light user: its running command and one waiting behind it are taken all the same.
    expect(admission.admit('light')).toBeUndefined();
    expect(admission.admit('light')).toBeUndefined();
    // The greedy ones now hold more than their share (1024 over 17 sandboxes waiting): refused.
    admission.release('greedy-0');
    expect(admission.admit('greedy-0')?.message).toMatch(/its share while other sandboxes wait too/);
    // The place a greedy one gave back goes to the light one, up to its share.
    expect(admission.admit('light')).toBeUndefined();
  });

  it('gives each sandbox the whole of maxQueuedPerScope when it is alone, and no more', () => {
    const admission = createServeAdmission({ maxInFlight: 4, maxQueuedPerScope: 3, maxQueued: 1024 });
    const answers = Array.from({ length: 6 }, () => admission.admit('a'));
    expect(answers.map((answer) => answer === undefined)).toEqual([true, true, true, true, false, false]);
    expect(answers[4]?.message).toMatch(/already has 3 commands waiting/);
  });

  it('gives every place back: after each request is answered, the same load is admitted again', () => {
    const admission = createServeAdmission({ maxInFlight: 2, maxQueuedPerScope: 4, maxQueued: 4 });
    for (let round = 0; round < 3; round++) {
      const taken = ['a', 'a', 'a', 'b', 'b', 'b'].filter((scope) => admission.admit(scope) === undefined);
      expect(taken).toEqual(['a', 'a', 'a', 'b', 'b', 'b']);
      expect(admission.admit('c')?.message).toMatch(/2 sandboxes are running commands already/);
      for (const scope of taken) admission.release(scope);
    }
  });
});
