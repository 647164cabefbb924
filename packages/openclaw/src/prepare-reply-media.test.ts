import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SandboxFileError } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { prepareReplyMedia, removeReplyMediaCopies, replyMediaCandidates, replyMediaTargetOf } from './prepare-reply-media.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
function folder(prefix: string): string {
  const created = mkdtempSync(path.join(tmpdir(), prefix));
  folders.push(created);
  return created;
}

describe('the MEDIA: lines of a reply', () => {
  it('finds the paths OpenClaw would send, and none in code blocks', () => {
    expect(replyMediaCandidates('Here it is.\nMEDIA:/workspace/out.txt')).toEqual(['/workspace/out.txt']);
    // A superset: OpenClaw's splitMediaOutput chooses among the whole and its words.
    expect(replyMediaCandidates('  media: `report 1.pdf`')).toEqual(['report 1.pdf', 'report', '1.pdf']);
    expect(replyMediaCandidates('MEDIA: "/workspace/a b.png"')).toEqual(['/workspace/a b.png']);
    expect(replyMediaCandidates('MEDIA:out/x.csv trailing')).toEqual(['out/x.csv trailing', 'out/x.csv', 'trailing']);
    expect(replyMediaCandidates('```\nMEDIA:/workspace/in-code.txt\n```\nsee MEDIA:/workspace/inline.txt')).toEqual([]);
  });
});

describe('where OpenClaw reads a named file', () => {
  const root = '/state/sandboxes/agent-main-telegram-direct-1';
  it("maps /workspace, file:// and relative paths onto OpenClaw's host copy, as its mapContainerWorkspacePath does", () => {
    expect(replyMediaTargetOf('/workspace/out/r.pdf', root)).toEqual({
      named: '/workspace/out/r.pdf',
      sandboxPath: '/workspace/out/r.pdf',
      hostPath: `${root}/out/r.pdf`,
    });
    expect(replyMediaTargetOf('file:///workspace/a%20b.txt', root)?.hostPath).toBe(`${root}/a b.txt`);
    expect(replyMediaTargetOf('out/r.pdf', root)?.sandboxPath).toBe('/workspace/out/r.pdf');
    expect(replyMediaTargetOf('./r.pdf', root)?.hostPath).toBe(`${root}/r.pdf`);
    expect(replyMediaTargetOf(`${root}/r.pdf`, root)?.sandboxPath).toBe('/workspace/r.pdf');
    // `..` is resolved on the text, as OpenClaw does, and must stay inside.
    expect(replyMediaTargetOf('/workspace/a/../r.pdf', root)?.sandboxPath).toBe('/workspace/r.pdf');
  });

  it('leaves every other path to OpenClaw, which refuses it or reads only its own folders', () => {
    for (const named of [
      '/workspace',
      '/workspace/../agent-main-telegram-direct-2/secret.txt',
      '../agent-main-telegram-direct-2/secret.txt',
      '/state/sandboxes/agent-main-telegram-direct-2/secret.txt',
      '/srv/berth/docker/telegram@2/workspace/secret.txt',
      '/root/x.txt',
      '~/x.txt',
      'https://example.org/x.png',
      'file://host/workspace/x',
      'file:///workspace%2f..%2fx',
      // A word of the line, not a file to OpenClaw: no folder, no extension.
      'trailing',
      '',
    ]) {
      expect(replyMediaTargetOf(named, root), named).toBeUndefined();
    }
  });
});

/** The default share: four files of 50 MB. */
const BUDGET = 200 * 1024 * 1024;

describe('placing a reply file where OpenClaw reads it', () => {
  it("puts exactly the sandbox's bytes there, privately, and removes them afterwards", async () => {
    const root = folder('berth-reply-');
    const bytes = Buffer.from([0, 1, 2, 255, 10, 13]);
    const reads: string[] = [];
    const outcomes = await prepareReplyMedia({
      hostWorkspaceDir: root,
      text: 'Done.\nMEDIA:/workspace/out/result.bin',
      read: async (sandboxPath) => {
        reads.push(sandboxPath);
        return bytes;
      },
      budget: BUDGET,
    });
    expect(reads).toEqual(['/workspace/out/result.bin']);
    expect(outcomes).toEqual([
      { named: '/workspace/out/result.bin', sandboxPath: '/workspace/out/result.bin', hostPath: path.join(root, 'out/result.bin'), bytes: 6 },
    ]);
    expect(readFileSync(path.join(root, 'out/result.bin'))).toEqual(bytes);
    expect(lstatSync(path.join(root, 'out/result.bin')).mode & 0o777).toBe(0o600);
    await removeReplyMediaCopies([path.join(root, 'out/result.bin')]);
    expect(existsSync(path.join(root, 'out/result.bin'))).toBe(false);
  });

  it('leaves nothing at the host path for a refused or missing file, even a file OpenClaw or an earlier reply left there', async () => {
    const root = folder('berth-reply-');
    writeFileSync(path.join(root, 'stale.txt'), 'an older copy');
    writeFileSync(path.join(root, 'refused.txt'), 'an older copy');
    const outcomes = await prepareReplyMedia({
      hostWorkspaceDir: root,
      text: 'MEDIA:stale.txt\nMEDIA:/workspace/refused.txt',
      read: async (sandboxPath) => {
        if (sandboxPath.endsWith('stale.txt')) throw new SandboxFileError('FILE_NOT_FOUND', sandboxPath, `${sandboxPath} does not exist in the sandbox`);
        throw new SandboxFileError('FILE_REFUSED', sandboxPath, `${sandboxPath} leads outside the sandbox's /workspace, /root and /tmp (to /proc/1/environ)`);
      },
      budget: BUDGET,
    });
    expect(outcomes.map((outcome) => outcome.refusal)).toEqual([
      '/workspace/stale.txt does not exist in the sandbox',
      "/workspace/refused.txt leads outside the sandbox's /workspace, /root and /tmp (to /proc/1/environ)",
    ]);
    expect(existsSync(path.join(root, 'stale.txt'))).toBe(false);
    expect(existsSync(path.join(root, 'refused.txt'))).toBe(false);
  });

  it('never writes through a link in the host copy: a link at the path is replaced, a linked folder refused', async () => {
    const root = folder('berth-reply-');
    const elsewhere = folder('berth-elsewhere-');
    writeFileSync(path.join(elsewhere, 'victim'), 'untouched');
    symlinkSync(path.join(elsewhere, 'victim'), path.join(root, 'out.txt'));
    symlinkSync(elsewhere, path.join(root, 'linked'));
    const outcomes = await prepareReplyMedia({
      hostWorkspaceDir: root,
      text: 'MEDIA:/workspace/out.txt\nMEDIA:/workspace/linked/new.txt',
      read: async () => Buffer.from('from the sandbox'),
      budget: BUDGET,
    });
    expect(readFileSync(path.join(elsewhere, 'victim'), 'utf8')).toBe('untouched');
    expect(lstatSync(path.join(root, 'out.txt')).isFile()).toBe(true);
    expect(readFileSync(path.join(root, 'out.txt'), 'utf8')).toBe('from the sandbox');
    expect(outcomes[1]?.refusal).toMatch(/cannot be placed for delivery/);
    expect(existsSync(path.join(elsewhere, 'new.txt'))).toBe(false);
  });

  it('reads nothing for a path OpenClaw will not map into the host copy', async () => {
    const root = folder('berth-reply-');
    mkdirSync(path.join(root, 'sub'));
    const outcomes = await prepareReplyMedia({
      hostWorkspaceDir: root,
      text: 'MEDIA:/etc/passwd\nMEDIA:../other/x.txt\nMEDIA:https://example.org/a.png\nMEDIA:/workspace/sub',
      read: async () => expect.fail('nothing is read'),
      budget: BUDGET,
    });
    expect(outcomes).toEqual([
      { named: '/workspace/sub', sandboxPath: '/workspace/sub', hostPath: path.join(root, 'sub'), refusal: '/workspace/sub is a folder; name a file in it' },
    ]);
  });

  it("places a reply's files up to the user's share of the gateway's disk, and refuses the rest in one line", async () => {
    const root = folder('berth-reply-');
    const text = ['a', 'b', 'c'].map((name) => `MEDIA:/workspace/${name}.bin`).join('\n');
    const outcomes = await prepareReplyMedia({ hostWorkspaceDir: root, text, read: async () => Buffer.alloc(400), budget: 1000 });
    expect(outcomes.map((outcome) => outcome.bytes ?? outcome.refusal)).toEqual([
      400,
      400,
      expect.stringMatching(/^\/workspace\/c\.bin would take this reply's files past 0 MB, the user's share of the gateway's disk/),
    ]);
    expect(existsSync(path.join(root, 'c.bin'))).toBe(false);
  });
});
