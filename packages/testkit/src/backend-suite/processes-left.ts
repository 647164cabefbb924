import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { BackendFixture } from './create-backend-fixture.js';

/** The `ps` lines in alice's sandbox still matching `pattern` after up to `graceMs`, polled: what a kill left behind. */
export async function processesLeft(fixture: BackendFixture, pattern: string, graceMs = 5_000): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const listing = await fixture.run('alice', 'ps');
    expect(listing.exitCode).toBe(0);
    const lines = listing.stdout.split('\n').filter((line) => line.includes(pattern));
    if (lines.length === 0 || Date.now() > deadline) return lines;
    await sleep(250);
  }
}
