import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomTelegramUser, randomWhatsAppUser, startAttackGateway, temporarySandboxDir, type AttackGateway } from './support/attack-gateway.js';
import { releaseDisksUnder } from '@berth/gateway-plugin';

// The sandbox root ({sandbox_dir}/docker) on a 2 MB tmpfs: full, then read-only. Users' files
// must survive, errors must be one clear line, and everything must work again once space or
// write access returns. Without per-user disks (container_disk: 0), so the host's folders are
// what fills; disk.attack.test.ts tries the per-user limit.
const sandboxDir = temporarySandboxDir('disk');
const root = path.join(sandboxDir, 'docker');
const owner = randomTelegramUser();
const newcomer = randomWhatsAppUser();
const lateComer = randomTelegramUser();
let gateway: AttackGateway;
let mounted = false;

function mount(...args: string[]): void {
  execFileSync('mount', args, { stdio: 'pipe' });
}

beforeAll(async () => {
  mkdirSync(root, { recursive: true });
  mount('-t', 'tmpfs', '-o', 'size=2m', 'berth-attack-disk', root);
  mounted = true;
  gateway = await startAttackGateway({ sandboxDir, config: { container_disk: 0 } });
  expect((await gateway.run(owner, 'echo keep > /workspace/keep; echo ok')).output).toBe('ok\n');
});

afterAll(async () => {
  await gateway?.cleanup();
  if (mounted) execFileSync('umount', ['-l', root], { stdio: 'pipe' });
  await releaseDisksUnder(sandboxDir);
  rmSync(sandboxDir, { recursive: true, force: true });
});

describe("faults: the sandbox root's disk is full or read-only", () => {
  it('full: the writing command fails with one "No space left" line, files are intact, and writing works again once space returns', async () => {
    const full = await gateway.run(
      owner,
      'dd if=/dev/zero of=/workspace/big bs=64k count=64 2>&1 | grep -i "space"; echo more >> /workspace/keep; echo "append=$?"',
    );
    expect(full.output).toMatch(/No space left on device/);
    expect(full.output.split('\n').filter((line) => /space/i.test(line))).toHaveLength(1);
    // A new user's first command still gets a sandbox (folders take no data blocks).
    const first = await gateway.attempt(newcomer, 'echo hello');
    expect(first instanceof Error ? first.message.split('\n') : first.output).toEqual(
      first instanceof Error ? [expect.stringMatching(/space|ENOSPC/i)] : 'hello\n',
    );
    await gateway.run(owner, 'rm -f /workspace/big');
    const recovered = await gateway.run(owner, 'echo again > /workspace/again && cat /workspace/keep /workspace/again');
    expect(recovered.output).toMatch(/^keep\n(more\n)?again\n$/);
    expect(readFileSync(path.join(gateway.folderOf(owner).workspace, 'keep'), 'utf8')).toMatch(/^keep\n/);
  });

  it('read-only: writes fail, reads work, a new user gets one clear line and no container, and all works after remount rw', async () => {
    mount('-o', 'remount,ro', root);
    try {
      const readOnly = await gateway.run(owner, 'cat /workspace/keep; echo x > /workspace/x 2>&1; echo "write=$?"');
      expect(readOnly.output).toMatch(/^keep\n/);
      expect(readOnly.output).toMatch(/Read-only file system/);
      expect(readOnly.output).toMatch(/write=[1-9]/);
      const refused = await gateway.attempt(lateComer, 'echo should-not-run');
      expect(refused).toBeInstanceOf(Error);
      const message = (refused as Error).message;
      expect(message.split('\n')).toHaveLength(1);
      expect(message).toMatch(/read-only|EROFS/i);
      expect(message).toContain(root);
      expect(await gateway.containerOf(lateComer)).toBeUndefined();
    } finally {
      mount('-o', 'remount,rw', root);
    }
    expect((await gateway.run(lateComer, 'echo hello')).output).toBe('hello\n');
    expect((await gateway.run(owner, 'echo y > /workspace/y && cat /workspace/keep')).output).toMatch(/^keep\n/);
  });
});
