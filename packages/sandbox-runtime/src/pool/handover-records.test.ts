import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DriverSandbox, SandboxDriverV1 } from '@berth/core/driver';
import { forgetHandover, readHandover, recordedSlots, withHandovers, writeHandover } from './handover-records.js';

const SLOT = 'ab'.repeat(16);
let root = '';
afterEach(() => rmSync(root, { recursive: true, force: true }));

const pooled = (name: string): DriverSandbox => ({
  id: 'c1',
  name,
  state: 'running',
  labels: {
    'dev.berth.managed-by': 'berth',
    'dev.berth.kind': 'pool',
    'dev.berth.pool': SLOT,
    'dev.berth.workspace': path.join(root, `pool~${SLOT}`, 'workspace'),
    'dev.berth.config-hash': 'pool-hash',
  },
});
/** A driver over one listed sandbox (a unit test of the reading around an engine, not of one). */
const over = (sandbox: DriverSandbox): SandboxDriverV1 =>
  withHandovers({
    inspect: async () => sandbox,
    list: async (labels: Record<string, string>) => (Object.entries(labels).every(([key, value]) => sandbox.labels[key] === value) ? [sandbox] : []),
  } as unknown as SandboxDriverV1);
const user = {
  'dev.berth.scope': 'user:telegram:1',
  'dev.berth.kind': 'user',
  'dev.berth.workspace': '/r/telegram@1/workspace',
  'dev.berth.config-hash': 'user-hash',
};

describe('hand-over records', () => {
  it("show a handed-over pooled sandbox with its user's labels, listed and filtered by them", async () => {
    root = mkdtempSync(path.join(tmpdir(), 'berth-records-'));
    writeHandover(root, SLOT, { name: 'berth-user', labels: user });
    const driver = over(pooled('berth-user'));
    expect((await driver.inspect('berth-user'))?.labels).toMatchObject({ ...user, 'dev.berth.pool': SLOT });
    expect(await driver.list({ 'dev.berth.managed-by': 'berth', 'dev.berth.scope': 'user:telegram:1' })).toHaveLength(1);
    expect(await driver.list({ 'dev.berth.managed-by': 'berth', 'dev.berth.scope': 'user:telegram:2' })).toHaveLength(0);
    expect(await driver.list({ 'dev.berth.kind': 'pool' })).toHaveLength(0);
    expect(recordedSlots(root)).toEqual([SLOT]);
  });

  it('name nobody while the sandbox does not bear the name they record (a hand-over cut short)', async () => {
    root = mkdtempSync(path.join(tmpdir(), 'berth-records-'));
    writeHandover(root, SLOT, { name: 'berth-user', labels: user });
    const driver = over(pooled(`berth-pool-${SLOT}`));
    expect((await driver.inspect('x'))?.labels['dev.berth.scope']).toBeUndefined();
    expect(await driver.list({ 'dev.berth.scope': 'user:telegram:1' })).toEqual([]);
    forgetHandover(root, SLOT);
    expect(readHandover(root, SLOT)).toBeUndefined();
  });

  it('set only the labels of whose a sandbox is, whatever else a record holds, and ignore a record that does not parse', async () => {
    root = mkdtempSync(path.join(tmpdir(), 'berth-records-'));
    writeHandover(root, SLOT, { name: 'n', labels: { ...user, 'dev.berth.managed-by': 'someone', 'dev.berth.network': 'other' } });
    expect(readHandover(root, SLOT)?.labels).toEqual(user);
    writeFileSync(path.join(root, '.berth-pool', `${SLOT}.json`), '{"name":');
    expect(readHandover(root, SLOT)).toBeUndefined();
    expect(readHandover(root, '../x')).toBeUndefined();
  });
});
