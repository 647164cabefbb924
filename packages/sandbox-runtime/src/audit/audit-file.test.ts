import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openAuditFile } from './audit-file.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function folder(): string {
  const made = mkdtempSync(path.join(tmpdir(), 'berth-audit-'));
  folders.push(made);
  return made;
}

function recordingLogger() {
  const lines: string[] = [];
  return { lines, info: (line: string) => lines.push(line), warn: (line: string) => lines.push(line), error: (line: string) => lines.push(line) };
}

const linesOf = (file: string): Array<Record<string, unknown>> =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('openAuditFile', () => {
  it('creates the file mode 0600 and appends after what is there', async () => {
    const file = path.join(folder(), 'audit.jsonl');
    writeFileSync(file, '{"earlier":true}\n', { mode: 0o600 });
    const audit = openAuditFile({ path: file, maxBytes: 1 << 20, keep: 2 });
    audit.append('a', { n: 1 });
    audit.append('a', { n: 2 });
    await audit.close();
    expect(linesOf(file)).toEqual([{ earlier: true }, { n: 1 }, { n: 2 }]);

    const fresh = path.join(folder(), 'new.jsonl');
    const other = openAuditFile({ path: fresh, maxBytes: 1 << 20, keep: 2 });
    other.append('a', { n: 1 });
    await other.close();
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
  });

  it('rotates by size and keeps `keep` old files, the newest as .1', async () => {
    const file = path.join(folder(), 'audit.jsonl');
    // Each line is 12 bytes ({"n":"000"}\n); 30 bytes hold two of them.
    const audit = openAuditFile({ path: file, maxBytes: 30, keep: 2 });
    for (let n = 0; n < 7; n++) {
      audit.append('a', { n: String(n).padStart(3, '0') });
      await audit.flush();
    }
    await audit.close();
    expect(linesOf(file).map((line) => line.n)).toEqual(['006']);
    expect(linesOf(`${file}.1`).map((line) => line.n)).toEqual(['004', '005']);
    expect(linesOf(`${file}.2`).map((line) => line.n)).toEqual(['002', '003']);
    expect(existsSync(`${file}.3`)).toBe(false);
    for (const kept of [file, `${file}.1`, `${file}.2`]) expect(statSync(kept).size).toBeLessThanOrEqual(30);
  });

  it('bounds what one user may queue and what all may, dropping and counting the rest, others untouched', async () => {
    const file = path.join(folder(), 'audit.jsonl');
    const logger = recordingLogger();
    const audit = openAuditFile({ path: file, maxBytes: 1 << 20, keep: 1, linesPerUser: 3, linesInAll: 5, logger });
    // All appended before the writer runs: as a disk too slow to keep up would have it.
    for (let n = 0; n < 10; n++) audit.append('loud', { user: 'loud', n });
    audit.append('quiet', { user: 'quiet', n: 0 });
    audit.append('quiet', { user: 'quiet', n: 1 });
    audit.append('third', { user: 'third', n: 0 }); // past the total of 5
    expect(audit.dropped).toBe(8);
    await audit.flush();
    audit.append('loud', { user: 'loud', n: 10 });
    await audit.close();
    const lines = linesOf(file);
    expect(lines.filter((line) => line.user === 'loud').map((line) => line.n)).toEqual([0, 1, 2, 10]);
    expect(lines.filter((line) => line.user === 'quiet').map((line) => line.n)).toEqual([0, 1]);
    expect(lines.filter((line) => line.type === 'dropped')).toEqual([expect.objectContaining({ count: 8 })]);
    expect(logger.lines.filter((line) => line.includes('not keeping up'))).toHaveLength(1);
  });

  it('never throws when the file cannot be written: says so once, counts the lines, and writes again once it can', async () => {
    const where = path.join(folder(), 'missing-folder');
    const file = path.join(where, 'audit.jsonl');
    const logger = recordingLogger();
    const audit = openAuditFile({ path: file, maxBytes: 1 << 20, keep: 1, logger, retryAfterMs: 0 });
    for (let n = 0; n < 3; n++) {
      expect(() => audit.append('a', { n })).not.toThrow();
      await audit.flush();
    }
    expect(audit.dropped).toBe(3);
    const said = logger.lines.filter((line) => line.includes('cannot write the audit file'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(file);
    expect(said[0]).toContain('ENOENT');
    mkdirSync(where);
    audit.append('a', { n: 3 });
    await audit.close();
    expect(linesOf(file)).toEqual([expect.objectContaining({ type: 'dropped', count: 3 }), { n: 3 }]);
    expect(logger.lines.some((line) => line.includes('is written again'))).toBe(true);
  });

  it('refuses a link planted in place of the file', async () => {
    const base = folder();
    const target = path.join(base, 'elsewhere');
    writeFileSync(target, '');
    const file = path.join(base, 'audit.jsonl');
    (await import('node:fs')).symlinkSync(target, file);
    const logger = recordingLogger();
    const audit = openAuditFile({ path: file, maxBytes: 1 << 20, keep: 1, logger });
    audit.append('a', { n: 1 });
    await audit.close();
    expect(readFileSync(target, 'utf8')).toBe('');
    expect(logger.lines.some((line) => line.includes('ELOOP'))).toBe(true);
  });
});
