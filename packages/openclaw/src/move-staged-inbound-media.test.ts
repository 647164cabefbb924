import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SandboxFileError } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { moveStagedInboundMedia } from './move-staged-inbound-media.js';

const STAGED = 'openclaw-staged-0b9c4f7e-1d2a-4c3b-8e4f-5a6b7c8d9e0f';
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** OpenClaw's host copy of a session's workspace, with what stageSandboxMedia leaves in it. */
function hostWorkspace(): string {
  const folder = mkdtempSync(path.join(tmpdir(), 'berth-staged-'));
  folders.push(folder);
  mkdirSync(path.join(folder, 'media', 'inbound', STAGED), { recursive: true });
  writeFileSync(path.join(folder, 'media', 'inbound', STAGED, '.gitignore'), '*\n');
  writeFileSync(path.join(folder, 'media', 'inbound', STAGED, 'input-report.pdf'), 'the report');
  writeFileSync(path.join(folder, 'AGENTS.md'), 'seeded by OpenClaw');
  return folder;
}

describe('moving staged attachments into the sandbox', () => {
  it('puts each staged file at the path the agent was told, in /workspace, and leaves no copy on the host', async () => {
    const root = hostWorkspace();
    const puts: Array<[string, string, string]> = [];
    const outcomes = await moveStagedInboundMedia({
      hostWorkspaceDir: root,
      put: async (hostPath, sandboxPath) => puts.push([path.relative(root, hostPath), sandboxPath, readFileSync(hostPath, 'utf8')]),
    });
    expect(puts).toEqual([
      [`media/inbound/${STAGED}/.gitignore`, `/workspace/media/inbound/${STAGED}/.gitignore`, '*\n'],
      [`media/inbound/${STAGED}/input-report.pdf`, `/workspace/media/inbound/${STAGED}/input-report.pdf`, 'the report'],
    ]);
    expect(outcomes.map((outcome) => outcome.refusal)).toEqual([undefined, undefined]);
    expect(readdirSync(path.join(root, 'media', 'inbound'))).toEqual([]);
    // Nothing else of OpenClaw's folder is touched.
    expect(readFileSync(path.join(root, 'AGENTS.md'), 'utf8')).toBe('seeded by OpenClaw');
    // A second turn finds nothing to move.
    expect(await moveStagedInboundMedia({ hostWorkspaceDir: root, put: async () => expect.fail('nothing is staged') })).toEqual([]);
  });

  it('removes a refused attachment from the host too, and says why', async () => {
    const root = hostWorkspace();
    const outcomes = await moveStagedInboundMedia({
      hostWorkspaceDir: root,
      put: async (_hostPath, sandboxPath) => {
        throw new SandboxFileError('FILE_TOO_LARGE', sandboxPath, `${sandboxPath} is larger than 50 MB (terminal.docker_file_limit); send a smaller file`);
      },
    });
    expect(outcomes[1]).toEqual({
      sandboxPath: `/workspace/media/inbound/${STAGED}/input-report.pdf`,
      refusal: `/workspace/media/inbound/${STAGED}/input-report.pdf is larger than 50 MB (terminal.docker_file_limit); send a smaller file`,
    });
    expect(existsSync(path.join(root, 'media', 'inbound', STAGED))).toBe(false);
  });

  it('lets any other error through (the engine is gone): the file stays for the next turn', async () => {
    const root = hostWorkspace();
    await expect(
      moveStagedInboundMedia({
        hostWorkspaceDir: root,
        put: async () => {
          throw new Error('connect ENOENT /var/run/docker.sock');
        },
      }),
    ).rejects.toThrow(/docker.sock/);
    expect(existsSync(path.join(root, 'media', 'inbound', STAGED, 'input-report.pdf'))).toBe(true);
  });

  it('follows no link: neither a staged entry, nor a staged folder, nor media/ itself', async () => {
    const elsewhere = mkdtempSync(path.join(tmpdir(), 'berth-elsewhere-'));
    folders.push(elsewhere);
    writeFileSync(path.join(elsewhere, 'secret'), 'somebody else’s');
    mkdirSync(path.join(elsewhere, 'inbound', STAGED), { recursive: true });
    writeFileSync(path.join(elsewhere, 'inbound', STAGED, 'input-x'), 'somebody else’s');

    const root = hostWorkspace();
    symlinkSync(path.join(elsewhere, 'secret'), path.join(root, 'media', 'inbound', STAGED, 'input-link'));
    const other = 'openclaw-staged-1b9c4f7e-1d2a-4c3b-8e4f-5a6b7c8d9e0f';
    symlinkSync(path.join(elsewhere, 'inbound', STAGED), path.join(root, 'media', 'inbound', other));
    const puts: string[] = [];
    const outcomes = await moveStagedInboundMedia({ hostWorkspaceDir: root, put: async (hostPath) => puts.push(path.basename(hostPath)) });
    expect(puts).toEqual(['.gitignore', 'input-report.pdf']);
    expect(outcomes.find((outcome) => outcome.sandboxPath.endsWith('input-link'))?.refusal).toMatch(/was not a regular file/);
    expect(readFileSync(path.join(elsewhere, 'secret'), 'utf8')).toBe('somebody else’s');
    expect(existsSync(path.join(elsewhere, 'inbound', STAGED, 'input-x'))).toBe(true);

    const linked = mkdtempSync(path.join(tmpdir(), 'berth-staged-'));
    folders.push(linked);
    symlinkSync(elsewhere, path.join(linked, 'media'));
    expect(await moveStagedInboundMedia({ hostWorkspaceDir: linked, put: async () => expect.fail('a linked media/ is not followed') })).toEqual([]);
  });

  it("moves only OpenClaw's staged folders (openclaw-staged-<uuid>), nothing else under media/inbound", async () => {
    const root = hostWorkspace();
    mkdirSync(path.join(root, 'media', 'inbound', 'openclaw-staged-../x'), { recursive: true });
    writeFileSync(path.join(root, 'media', 'inbound', STAGED, '.fs-safe-1234-abcd.tmp'), 'half written');
    mkdirSync(path.join(root, 'media', 'inbound', 'mine'));
    writeFileSync(path.join(root, 'media', 'inbound', 'mine', 'a'), 'a');
    const puts: string[] = [];
    await moveStagedInboundMedia({ hostWorkspaceDir: root, put: async (_hostPath, sandboxPath) => puts.push(sandboxPath) });
    expect(puts.every((sandboxPath) => sandboxPath.startsWith(`/workspace/media/inbound/${STAGED}/`))).toBe(true);
    expect(existsSync(path.join(root, 'media', 'inbound', 'mine', 'a'))).toBe(true);
    // A file OpenClaw is still writing stays where it is, and so does its folder.
    expect(puts).toHaveLength(2);
    expect(readFileSync(path.join(root, 'media', 'inbound', STAGED, '.fs-safe-1234-abcd.tmp'), 'utf8')).toBe('half written');
  });
});
