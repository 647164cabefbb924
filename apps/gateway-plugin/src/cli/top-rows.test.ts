import type { SandboxInfo } from '@berth/core';
import type { AuditReading, SandboxMeter } from '@berth/sandbox-runtime';
import { describe, expect, it } from 'vitest';
import { formatTable } from './format-table.js';
import { parseCliArguments, UsageError } from './parse-cli-arguments.js';
import { stringifyForDisplay } from './sandbox-record.js';
import { topFooter } from './top-command.js';
import { formatAge, formatBytes, TOP_TABLE_HEADERS, topRows, topTableRow } from './top-rows.js';

// `berth top`'s arithmetic and what it prints, from fixed readings (the kernel's files are read
// in @berth/sandbox-runtime's sandbox-meters.test.ts; the real thing in cli-top.integration.test.ts).
const MB = 2 ** 20;
const NOW = Date.parse('2026-12-06T23:30:00.000Z');
const id = (n: number): string => n.toString(16).padStart(64, '0');
const info = (n: number, extra: Partial<SandboxInfo> = {}): SandboxInfo => ({
  scopeKey: `task:t${n}`,
  kind: 'task',
  taskId: `t${n}`,
  containerId: id(n),
  containerName: `berth-${n}`,
  state: 'running',
  workspace: `/srv/t${n}/workspace`,
  home: `/srv/t${n}/home`,
  ...extra,
});
const meter = (cpuSeconds: number, memoryMb: number, extra: Partial<SandboxMeter> = {}): SandboxMeter => ({
  cpuSeconds,
  memoryBytes: memoryMb * MB,
  memoryLimitBytes: 512 * MB,
  pids: 3,
  pidsLimit: 256,
  network: { receivedBytes: 1500, sentBytes: 20 },
  ...extra,
});
const readings = (before: Record<number, SandboxMeter>, after: Record<number, SandboxMeter>, seconds = 2) => ({
  before: { at: 1000, meters: new Map(Object.entries(before).map(([n, value]) => [id(Number(n)), value])) },
  after: { at: 1000 + seconds * 1000, meters: new Map(Object.entries(after).map(([n, value]) => [id(Number(n)), value])) },
});
const noLimits = { user_commands_per_minute: 0, user_concurrent_commands: 0, user_cpu_seconds_per_day: 0 };

describe('topRows', () => {
  it('is CPU time over wall time, hottest first, then by memory against its own limit', () => {
    const rows = topRows({
      sandboxes: [info(1), info(2), info(3), info(4, { state: 'stopped' })],
      readings: readings({ 1: meter(10, 50), 2: meter(10, 400), 3: meter(10, 20) }, { 1: meter(10.1, 50), 2: meter(10.1, 400), 3: meter(11.8, 20) }),
      audit: undefined,
      config: noLimits,
      now: NOW,
    });
    expect(rows.map((row) => [row.sandbox, row.cpuPercent])).toEqual([
      ['berth-3', 90],
      ['berth-2', 5],
      ['berth-1', 5],
      ['berth-4', null],
    ]);
    expect(rows[0]).toMatchObject({ memory: { usedMb: 20, limitMb: 512 }, processes: { current: 3, limit: 256 }, commandsLastHour: null, near: [] });
    expect(rows[3]).toMatchObject({ memory: null, processes: null, network: null });
  });

  it('says nothing of CPU for a sandbox read once, or whose counter went back (it restarted)', () => {
    const rows = topRows({
      sandboxes: [info(1), info(2)],
      readings: readings({ 2: meter(50, 1) }, { 1: meter(3, 1), 2: meter(1, 1) }),
      audit: undefined,
      config: noLimits,
      now: NOW,
    });
    expect(rows.map((row) => row.cpuPercent)).toEqual([null, null]);
  });

  it('counts commands from the audit file and names the limits a user is near or was refused at', () => {
    const audit: AuditReading = {
      tallies: new Map([
        ['berth-1', { lastHour: 40, lastMinute: 25, refusals: new Map() }],
        [
          'berth-2',
          {
            lastHour: 3,
            lastMinute: 1,
            refusals: new Map([
              ['USER_CONCURRENCY_LIMIT', NOW - 5000],
              ['USER_CPU_LIMIT', NOW - 600_000],
            ]),
          },
        ],
        ['berth-3', { lastHour: 3, lastMinute: 1, refusals: new Map([['USER_CPU_LIMIT', Date.parse('2026-12-05T23:59:00Z')]]) }],
      ]),
    };
    const config = { user_commands_per_minute: 30, user_concurrent_commands: 2, user_cpu_seconds_per_day: 3600 };
    const rows = topRows({ sandboxes: [info(1), info(2), info(3), info(4)], readings: readings({}, {}), audit, config, now: NOW });
    const near = Object.fromEntries(rows.map((row) => [row.sandbox, row.near]));
    expect(near['berth-1']).toEqual([{ limit: 'user_commands_per_minute', detail: '25 of 30 in the last minute' }]);
    expect(near['berth-2']!.map((item) => item.limit)).toEqual(['user_concurrent_commands', 'user_cpu_seconds_per_day']);
    // Refused yesterday (UTC): a new day, a new allowance.
    expect(near['berth-3']).toEqual([]);
    expect(rows.find((row) => row.sandbox === 'berth-4')?.commandsLastHour).toBe(0);
    // 24 of 30 is 80 %: near; 23 is not.
    const at = (lastMinute: number) =>
      topRows({
        sandboxes: [info(1)],
        readings: readings({}, {}),
        audit: { tallies: new Map([['berth-1', { lastHour: 1, lastMinute, refusals: new Map() }]]) },
        config,
        now: NOW,
      })[0]!.near.length;
    expect([at(24), at(23)]).toEqual([1, 0]);
  });

  it('shows a hostile owner and state escaped, in the table and in JSON', () => {
    const hostile = info(1, { kind: 'user', scopeKey: 'user:signal:x', platform: 'signal', userId: 'ad\u202emin\u001b[2J\u2028', state: 'other' });
    const rows = topRows({ sandboxes: [hostile], readings: readings({ 1: meter(1, 1) }, { 1: meter(1, 1) }), audit: undefined, config: noLimits, now: NOW });
    const table = formatTable(
      TOP_TABLE_HEADERS,
      rows.map((row) => topTableRow(row, { atLeast: false })),
    );
    expect(table).toContain('signal:ad\\u{202E}min');
    const raw = ['\u202e', '\u2028', '\u001b'];
    expect(raw.filter((char) => table.includes(char))).toEqual([]);
    const json = stringifyForDisplay(rows);
    expect(raw.filter((char) => json.includes(char))).toEqual([]);
    expect(JSON.parse(json)[0].user).toBe('ad\u202emin\u001b[2J\u2028');
  });

  it('formats a row as an operator reads it', () => {
    const [row] = topRows({
      sandboxes: [info(1, { lastUsed: new Date(NOW - 125_000).toISOString(), disk: { usedMb: 12, limitMb: 1024 } })],
      readings: readings({ 1: meter(0, 100) }, { 1: meter(1.234, 100.4, { network: { receivedBytes: 2_500_000, sentBytes: 999 } }) }, 1),
      audit: { tallies: new Map([['berth-1', { lastHour: 7, lastMinute: 0, refusals: new Map() }]]) },
      config: noLimits,
      now: NOW,
    });
    expect(topTableRow(row!, { atLeast: true })).toEqual([
      'task t1',
      'running',
      '123.4%',
      '100/512 MB',
      '3/256',
      '12/1024 MB',
      '2.5 MB / 999 B',
      '≥7',
      '2m ago',
      '',
    ]);
    expect([formatBytes(0), formatBytes(1500), formatBytes(3e9)]).toEqual(['0 B', '1.5 kB', '3.0 GB']);
    expect([formatAge(59), formatAge(3600), formatAge(200_000)]).toEqual(['59s', '1h', '2d']);
  });
});

describe('topFooter', () => {
  const source = { parent: '/berth-a1', version: 1 } as const;
  const base = { audit_file: undefined, ...noLimits };
  it('says which columns are "-" and why', () => {
    const lines = topFooter({ source: { missing: 'on Kubernetes, usage comes from the metrics API' }, config: base, audit: undefined, rows: [] });
    expect(lines.join('\n')).toMatch(/CPU, MEMORY, PROCS and NET IN\/OUT are "-": on Kubernetes/);
    expect(lines.join('\n')).toMatch(/commands per hour .* need terminal\.audit_file/);
    const unreadable = topFooter({ source, config: { ...base, audit_file: '/var/log/a.jsonl' }, audit: { tallies: new Map(), error: 'EACCES' }, rows: [] });
    expect(unreadable.at(-1)).toMatch(/cannot be read \(EACCES\)/);
    expect(topFooter({ source, config: { ...base, audit_file: '/a' }, audit: { tallies: new Map() }, rows: [] })).toHaveLength(1);
  });
});

describe('berth top on the command line', () => {
  it('takes --once, --json with it, and --interval for the live table', () => {
    expect(parseCliArguments(['top'])).toMatchObject({ command: 'top', options: { once: false, json: false } });
    expect(parseCliArguments(['top', '--once', '--json'])).toMatchObject({ options: { once: true, json: true } });
    expect(parseCliArguments(['top', '--interval', '0.5'])).toMatchObject({ options: { interval: 0.5 } });
  });

  it.each([
    [['top', '--json'], /--json needs --once/],
    [['top', '--once', '--interval', '5'], /--interval is for the live table/],
    [['top', '--interval', '0'], /--interval "0" is not a number of seconds from 0.5 to 3600/],
    [['top', '--interval', '-1'], /--interval "-1"/],
    [['top', '--interval', 'soon'], /--interval "soon"/],
    [['top', '--platform', 'x'], /Unknown option '--platform'/],
  ])('refuses %j in one line', (argv, message) => {
    expect(() => parseCliArguments(argv)).toThrow(UsageError);
    expect(() => parseCliArguments(argv)).toThrow(message);
  });
});
