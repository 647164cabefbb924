import { appendFileSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuditTail } from './audit-tail.js';

// The audit file read back by `berth top`: counts per sandbox, each line read once however the
// file grows and rotates, and nothing thrown by a line that is not the writer's.
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
const NOW = Date.parse('2026-12-06T23:00:00.000Z');
const at = (secondsAgo: number): string => new Date(NOW - secondsAgo * 1000).toISOString();
const command = (sandbox: string, secondsAgo: number, extra: Record<string, unknown> = {}): string =>
  `${JSON.stringify({ time: at(secondsAgo), type: 'command', sandbox, user: null, scope: 'task', command: 'ls', outcome: 'ran', ...extra })}\n`;

function auditFile(text = ''): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-audit-tail-'));
  folders.push(folder);
  const file = path.join(folder, 'audit.jsonl');
  writeFileSync(file, text);
  return file;
}

describe('createAuditTail', () => {
  it("counts each sandbox's commands of the last hour and minute, refusals apart", () => {
    const file = auditFile(
      command('berth-a', 30) +
        command('berth-a', 90) +
        command('berth-a', 4000) +
        command('berth-b', 10, { outcome: 'refused', reason: 'USER_RATE_LIMIT' }) +
        command('berth-b', 20, { outcome: 'failed', reason: 'INTERNAL' }) +
        `${JSON.stringify({ time: at(5), type: 'sandbox', sandbox: 'berth-a', event: 'created' })}\n`,
    );
    const reading = createAuditTail(file).read(NOW);
    expect(reading.tallies.get('berth-a')).toMatchObject({ lastHour: 2, lastMinute: 1 });
    expect(reading.tallies.get('berth-b')).toMatchObject({ lastHour: 1, lastMinute: 1 });
    expect([...reading.tallies.get('berth-b')!.refusals.keys()]).toEqual(['USER_RATE_LIMIT']);
    expect(reading.coveredSince).toBeUndefined();
  });

  it('reads each line once as the file grows, is rotated to .1 and made again', () => {
    const file = auditFile(command('berth-a', 50));
    const tail = createAuditTail(file);
    expect(tail.read(NOW).tallies.get('berth-a')?.lastHour).toBe(1);
    appendFileSync(file, command('berth-a', 40));
    expect(tail.read(NOW).tallies.get('berth-a')?.lastHour).toBe(2);
    appendFileSync(file, command('berth-a', 30));
    renameSync(file, `${file}.1`);
    expect(tail.read(NOW).tallies.get('berth-a')?.lastHour).toBe(3);
    writeFileSync(file, command('berth-a', 20));
    expect(tail.read(NOW).tallies.get('berth-a')?.lastHour).toBe(4);
    expect(tail.read(NOW).tallies.get('berth-a')?.lastHour).toBe(4);
    // A fresh reader of the same files sees the same: the young file and its `.1`.
    expect(createAuditTail(file).read(NOW).tallies.get('berth-a')?.lastHour).toBe(4);
  });

  it('reads at most its budget from the end, and says since when it counted', () => {
    const lines = Array.from({ length: 200 }, (_, index) => command('berth-a', 600 - index)).join('');
    const reading = createAuditTail(auditFile(lines), 4096).read(NOW);
    const count = reading.tallies.get('berth-a')!.lastHour;
    expect(count).toBeGreaterThan(10);
    expect(count).toBeLessThan(200);
    expect(reading.coveredSince).toBeGreaterThan(NOW - 600_000);
  });

  it('skips hostile and broken lines without throwing, and keeps a hostile sandbox name as a key only', () => {
    const hostile = 'berth-\u202e\u001b[2J__proto__';
    const file = auditFile(
      `${[
        'not json "command"',
        '{"type":"command","sandbox":{"a":1},"time":"x"}',
        `{"type":"command","sandbox":"__proto__","time":"${at(5)}","outcome":"ran"}`,
        `{"type":"command","sandbox":"berth-a","time":"yesterday-ish"}`,
        `${'x'.repeat(100_000)}"command"`,
        '[1,2,3]',
        'null',
      ].join('\n')}\n${command(hostile, 3)}{"type":"command","sandbox":"berth-a","time":"${at(1)}"`,
    );
    const reading = createAuditTail(file).read(NOW);
    expect(reading.error).toBeUndefined();
    expect(reading.tallies.get(hostile)?.lastHour).toBe(1);
    expect(reading.tallies.get('__proto__')?.lastHour).toBe(1);
    // The last line, not ended yet, waits for its newline.
    expect(reading.tallies.get('berth-a')).toBeUndefined();
  });

  it('says why a file it cannot read is not read, and that no file yet is nothing yet', () => {
    const file = auditFile();
    rmSync(file);
    expect(createAuditTail(file).read(NOW)).toEqual({ tallies: new Map() });
    symlinkSync('/etc/hostname', file);
    expect(createAuditTail(file).read(NOW).error).toBe('ELOOP');
  });
});
