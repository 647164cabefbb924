import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installationTableName, installationTag } from '@berth/sandbox-runtime/driver';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { findEngine } from './testing/find-engine.js';
import { removeTestRoot } from './testing/remove-test-root.js';
import { berthTables, unownedNewTables } from './testing/host-egress-tables.js';
import { runBerthCli } from './testing/run-berth-cli.js';

// CLI-only use: each installation's egress table lives while it has sandboxes, and goes with the last.
const root = mkdtempSync(path.join(os.tmpdir(), 'berth-cli-tables-'));
const home = path.join(root, 'hermes');
const engine = findEngine('docker');
vi.setConfig({ testTimeout: 900_000 });

mkdirSync(home, { recursive: true });
writeFileSync(path.join(home, 'config.yaml'), 'terminal:\n  docker_image: localhost/berth-busybox:latest\n  timeout: 60\n');

afterAll(() => removeTestRoot(engine, root));

describe('the egress tables of CLI-only use', () => {
  it('one per installation while it has sandboxes, none once berth rm --purge removed its last', async () => {
    expect(berthTables(), 'nft list tables must work here: run the engine suites as root with nftables, as scripts/engines.sh sets them up').toBeDefined();
    const installations = ['one', 'two', 'three'].map((name) => {
      const environment = { HOME: root, HERMES_HOME: home, TERMINAL_SANDBOX_DIR: path.join(root, name) };
      const berth = async (args: string[]) => {
        const run = await runBerthCli(args, environment);
        expect(run.status, `${name}: berth ${args.join(' ')}: ${run.stderr}`).toBe(0);
      };
      return { name, berth, table: () => installationTableName(installationTag({ sandboxRoot: path.join(root, name, 'docker'), pool: '10.217.0.0/16' })) };
    });
    const [one, two, three] = installations as [(typeof installations)[0], (typeof installations)[0], (typeof installations)[0]];
    for (const installation of installations) await installation.berth(['exec', '--task', 'first', '--', 'true']);
    await one.berth(['exec', '--task', 'second', '--', 'true']);
    await one.berth(['exec', '--task', 'first', '--', 'true']);
    const tables = (): string[] => berthTables() ?? [];
    for (const installation of installations)
      expect(
        tables().filter((table) => table === installation.table()),
        installation.name,
      ).toHaveLength(1);
    // Removing one of two sandboxes keeps the table: the other still runs under it.
    await one.berth(['rm', '--task', 'first', '--purge']);
    expect(tables()).toContain(one.table());
    await one.berth(['rm', '--task', 'second', '--purge']);
    await two.berth(['rm', '--task', 'first', '--purge']);
    expect(tables()).not.toContain(one.table());
    expect(tables()).not.toContain(two.table());
    expect(tables()).toContain(three.table());
    // A sandbox made again gets its table again, and loses it again with its last removal.
    await two.berth(['exec', '--task', 'again', '--', 'true']);
    expect(tables()).toContain(two.table());
    await two.berth(['rm', '--task', 'again', '--purge']);
    await three.berth(['rm', '--task', 'first', '--purge']);
    for (const installation of installations) expect(tables(), installation.name).not.toContain(installation.table());
  });

  it('berth demo, whose process also made a spare network, leaves no table behind', async () => {
    const before = berthTables() ?? [];
    const run = await runBerthCli(['demo', '--json'], { HOME: root, HERMES_HOME: home });
    expect(run.status, run.stderr).toBe(0);
    expect(await unownedNewTables(before)).toEqual([]);
  });
});
