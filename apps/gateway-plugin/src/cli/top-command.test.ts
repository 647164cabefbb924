import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SandboxInfo } from '@berth/core';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CliIo } from './cli-io.js';

// `berth top`'s loop over a stand-in backend: how often it asks the engine, what it prints on a
// terminal and off one, and that Ctrl-C leaves with 0. The real engine: cli-top.integration.test.ts.
const calls = { list: 0, describe: 0, close: 0 };
const sandboxes: SandboxInfo[] = Array.from({ length: 30 }, (_, index) => ({
  scopeKey: `task:t${index}`,
  kind: 'task',
  taskId: `t${index}`,
  containerId: index.toString(16).padStart(64, '0'),
  containerName: `berth-${index}`,
  state: 'running',
  workspace: `/srv/t${index}/workspace`,
  home: `/srv/t${index}/home`,
}));
/** What the stand-in engine is, and what it reports of its sandboxes' use (a cluster's metrics API) when set. */
const engine: { name: string; usage?: () => Promise<unknown> } = { name: 'docker' };
vi.mock('../create-berth.js', () => ({
  createBerth: async () => ({
    backend: {
      get name() {
        return engine.name;
      },
      get usage() {
        return engine.usage;
      },
      describe: async () => {
        calls.describe++;
        return { engine: engine.name, endpoint: 'x', warnings: [] };
      },
      list: async () => {
        calls.list++;
        return sandboxes;
      },
    },
    close: async () => {
      calls.close++;
    },
  }),
}));
const { runTopCommand } = await import('./top-command.js');

const home = mkdtempSync(path.join(os.tmpdir(), 'berth-top-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));
beforeEach(() => {
  Object.assign(calls, { list: 0, describe: 0, close: 0 });
  engine.name = 'docker';
  delete engine.usage;
});

function io(isTTY: boolean): CliIo & { out: string[]; err: string[]; interrupt: () => void } {
  const out: string[] = [];
  const err: string[] = [];
  let listener: (() => void) | undefined;
  return {
    out,
    err,
    stdout: { write: (text: string) => out.push(text), isTTY },
    stderr: { write: (text: string) => err.push(text) },
    environment: { HERMES_HOME: home },
    cwd: home,
    onInterrupt: (handler) => {
      listener = () => handler('SIGINT');
      return () => {
        listener = undefined;
      };
    },
    interrupt: () => listener?.(),
  };
}

describe('berth top', () => {
  it('asks the engine once per refresh, whatever the number of sandboxes, and prints one table per refresh off a terminal', async () => {
    const cli = io(false);
    expect(await runTopCommand(cli, { json: false, purge: false, interval: 0.5 }, 3)).toBe(0);
    expect(calls).toEqual({ list: 3, describe: 1, close: 1 });
    const text = cli.out.join('');
    expect(text.split('berth top: every 0.5 s').length - 1).toBe(3);
    expect(text).not.toContain('\u001b[');
    expect(text).toMatch(/CPU, MEMORY, PROCS and NET IN\/OUT are "-": the docker engine's cgroups are not this host's/);
    expect(text).toMatch(/need terminal\.audit_file/);
  });

  it('redraws in place on a terminal, and leaves with 0 at Ctrl-C', async () => {
    const cli = io(true);
    const running = runTopCommand(cli, { json: false, purge: false, interval: 0.5 });
    await vi.waitFor(() => expect(cli.out.length).toBeGreaterThanOrEqual(2), { timeout: 5000 });
    cli.interrupt();
    expect(await running).toBe(0);
    expect(cli.out.every((table) => table.startsWith('\u001b[H\u001b[2J'))).toBe(true);
    expect(calls.close).toBe(1);
  });

  it('--once --json prints one array and the notes on stderr', async () => {
    const cli = io(false);
    expect(await runTopCommand(cli, { json: true, purge: false, once: true })).toBe(0);
    expect(calls.list).toBe(1);
    const rows = JSON.parse(cli.out.join('')) as Array<{ scope: string; cpuPercent: number | null; commandsLastHour: number | null }>;
    expect(rows).toHaveLength(30);
    expect(rows[0]).toMatchObject({ cpuPercent: null, commandsLastHour: null });
    expect(cli.err.join('')).toMatch(/^berth top: CPU, MEMORY/);
  });

  it("shows CPU and memory from the engine's report where the host cannot read the cgroups, and what is missing when it has none", async () => {
    engine.name = 'kubernetes';
    let reports = 0;
    engine.usage = async () => {
      reports++;
      return { sandboxes: new Map([['berth-1', { cpuCores: 0.25, memoryBytes: 64 * 2 ** 20 }]]) };
    };
    const cli = io(false);
    expect(await runTopCommand(cli, { json: true, once: true, purge: false }, 1)).toBe(0);
    expect(reports).toBe(1);
    const rows = JSON.parse(cli.out.join('')) as Array<{ sandbox: string; cpuPercent: number | null; memory: unknown; processes: unknown }>;
    expect(rows[0]).toMatchObject({ sandbox: 'berth-1', cpuPercent: 25, memory: { usedMb: 64, limitMb: null }, processes: null });
    expect(rows.find((row) => row.sandbox === 'berth-2')).toMatchObject({ cpuPercent: null, memory: null });
    expect(cli.err.join('')).toContain('PROCS and NET IN/OUT are "-": the kubernetes engine\'s metrics report CPU and memory only');

    engine.usage = async () => ({ missing: 'the cluster serves no resource metrics API' });
    const without = io(false);
    expect(await runTopCommand(without, { json: true, once: true, purge: false }, 1)).toBe(0);
    expect(JSON.parse(without.out.join(''))[0]).toMatchObject({ cpuPercent: null, memory: null });
    expect(without.err.join('')).toContain('CPU, MEMORY, PROCS and NET IN/OUT are "-": the cluster serves no resource metrics API');
  });
});
