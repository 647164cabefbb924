import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LABELS, MANAGED_BY } from '@berth/sandbox-runtime/driver';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { requestEngine } from './testing/engine-client.js';
import { findEngine } from './testing/find-engine.js';
import { berthTables, unownedNewTables } from './testing/host-egress-tables.js';
import { runBerthCli } from './testing/run-berth-cli.js';

// What an operator runs first, before any sandbox exists: reading must make nothing.
const root = mkdtempSync(path.join(os.tmpdir(), 'berth-cli-ro-'));
const engine = findEngine('docker');
vi.setConfig({ testTimeout: 300_000 });

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Berth's networks on the engine made by one of `pids` (their maker label is a process identity: boot, namespace, pid, start). */
async function networksMadeBy(pids: readonly number[]): Promise<string[]> {
  const networks = JSON.parse((await requestEngine(engine, 'GET', '/networks')).body) as Array<{ Name: string; Labels?: Record<string, string> }>;
  return networks
    .filter((network) => network.Labels?.[LABELS.managedBy] === MANAGED_BY)
    .filter((network) => pids.includes(Number(network.Labels?.[LABELS.maker]?.split('.')[2])))
    .map((network) => network.Name);
}

async function containersUnder(folder: string): Promise<string[]> {
  const containers = JSON.parse((await requestEngine(engine, 'GET', '/containers/json?all=1')).body) as Array<{
    Id: string;
    Mounts?: Array<{ Source?: string }>;
  }>;
  return containers.filter((container) => container.Mounts?.some((mount) => mount.Source?.startsWith(folder + path.sep))).map((container) => container.Id);
}

describe('berth doctor, ls and env create nothing', () => {
  it('where neither HERMES_HOME nor the sandbox folder exists: no folder, no installation key, no nftables table, no network, no container', async () => {
    const home = path.join(root, 'no-hermes-home');
    const sandboxes = path.join(root, 'no-sandboxes');
    const environment = { HOME: root, HERMES_HOME: home, TERMINAL_SANDBOX_DIR: sandboxes };
    const tablesBefore = berthTables();
    const pids: number[] = [];
    for (const args of [
      ['doctor'],
      ['doctor', '--json'],
      ['ls'],
      ['ls', '--json'],
      ['env', '--platform', 'telegram', '--user', '123456789'],
      ['env', '--platform', 'telegram', '--user', '123456789', '--json'],
      ['env', '--session-key', 'agent:main:telegram:direct:123456789', '--json'],
    ]) {
      const run = await runBerthCli(args, environment);
      if (run.pid !== undefined) pids.push(run.pid);
      // doctor may find a problem (an image missing); it must still have answered.
      expect(run.status === 0 || (args[0] === 'doctor' && run.status === 1), `${args.join(' ')}: ${run.stderr}`).toBe(true);
      expect(run.stdout.length, args.join(' ')).toBeGreaterThan(0);
    }
    expect(existsSync(home)).toBe(false);
    expect(existsSync(sandboxes)).toBe(false);
    expect(await containersUnder(sandboxes)).toEqual([]);
    expect(await networksMadeBy(pids)).toEqual([]);
    if (tablesBefore !== undefined) expect(await unownedNewTables(tablesBefore)).toEqual([]);
  });
});
