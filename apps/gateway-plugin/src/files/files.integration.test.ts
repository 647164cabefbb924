import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { requestSandboxExec, requestSandboxFile, SandboxSocketClientError } from '../socket/request-sandbox-exec.js';
import { useServeHarness } from '../testing/serve-harness.js';

// Files between a chat and a sandbox through `berth serve`, as the Hermes bridge sends them: the
// built dist/cli.js as the server, the real engine. Each attack is tried as a user would try it,
// from the user's own sandbox, and checked on the host.
const { root, home, sandboxes, socket, alice, bob, tokens, serverLog } = useServeHarness({ config: ['docker_file_limit: 2'] });
const outbox = path.join(home, 'cache', 'documents', 'berth-outbox');

const session = (user: string) => ({ v: 1 as const, platform: 'telegram', userId: user, sessionRequired: true });
const run = (user: string, command: string) => requestSandboxExec(socket, { ...session(user), command });
const put = (user: string, source: string, to: string) => requestSandboxFile(socket, { ...session(user), op: 'put-file', source, path: to });
const get = (user: string, named: string) => requestSandboxFile(socket, { ...session(user), op: 'get-file', path: named, target: outbox });
const workspaceOf = (user: string) => path.join(sandboxes, 'docker', `telegram@${user}`, 'workspace');

async function refusalOf(promise: Promise<unknown>): Promise<SandboxSocketClientError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof SandboxSocketClientError) return error;
    throw error;
  }
  throw new Error('the request was not refused');
}

/** Every file the outbox holds, with its bytes. */
function outboxFiles(): Buffer[] {
  if (!existsSync(outbox)) return [];
  return readdirSync(outbox).flatMap((folder) => readdirSync(path.join(outbox, folder)).map((name) => readFileSync(path.join(outbox, folder, name))));
}

describe('files between a chat and the user sandbox (berth serve put-file, get-file)', () => {
  const attachment = randomBytes(1_500_000);
  attachment[0] = 0;
  const attachmentPath = path.join(home, 'cache', 'documents', 'doc_0a1b2c3d4e5f_report.bin');

  it("puts an attachment into the sender's own sandbox only, byte for byte, and nowhere the other user can find it", async () => {
    mkdirSync(path.dirname(attachmentPath), { recursive: true });
    writeFileSync(attachmentPath, attachment);
    const result = await put(alice, attachmentPath, '/workspace/attachments/doc_0a1b2c3d4e5f_report.bin');
    expect(result).toMatchObject({ path: '/workspace/attachments/doc_0a1b2c3d4e5f_report.bin', bytes: attachment.length, scope: `user:telegram:${alice}` });
    const seen = await run(alice, 'sha256sum /workspace/attachments/doc_0a1b2c3d4e5f_report.bin; ls -a /workspace/attachments');
    const expected = createHash('sha256').update(attachment).digest('hex');
    expect(seen.stdout).toContain(expected);
    expect(seen.stdout).not.toContain('.berth-incoming');
    const other = await run(bob, 'ls /workspace/attachments; find / -xdev -name "doc_0a1b2c3d4e5f*" 2>/dev/null; echo end');
    expect(other.stdout).toBe('end\n');
    expect(existsSync(path.join(workspaceOf(bob), 'attachments'))).toBe(false);
  });

  it('never writes over a file already at the path, and leaves nothing half-written when an attachment is refused', async () => {
    await run(alice, 'echo mine > /workspace/attachments/keep.txt');
    const exists = await refusalOf(put(alice, attachmentPath, '/workspace/attachments/keep.txt'));
    expect(exists.code).toBe('FILE_EXISTS');
    const large = path.join(root, 'large.bin');
    writeFileSync(large, Buffer.alloc(3 * 1024 * 1024, 1));
    const tooLarge = await refusalOf(put(alice, large, '/workspace/attachments/large.bin'));
    expect(tooLarge.code).toBe('FILE_TOO_LARGE');
    expect(tooLarge.message).toMatch(/docker_file_limit \(2 MB\)/);
    const link = path.join(root, 'link.bin');
    symlinkSync(attachmentPath, link);
    expect((await refusalOf(put(alice, link, '/workspace/attachments/link.bin'))).message).toMatch(/is a symbolic link/);
    const listing = await run(alice, 'cat /workspace/attachments/keep.txt; ls -a /workspace/attachments');
    expect(listing.stdout).toBe('mine\n.\n..\ndoc_0a1b2c3d4e5f_report.bin\nkeep.txt\n');
  });

  it('refuses an attachment folder the user turned into a link out of their folders', async () => {
    await run(bob, 'ln -s /etc /workspace/attachments');
    const refused = await refusalOf(put(bob, attachmentPath, '/workspace/attachments/doc_0a1b2c3d4e5f_report.bin'));
    expect(refused.code).toBe('FILE_REFUSED');
    expect(refused.message).toMatch(/leads outside the sandbox/);
    expect((await run(bob, 'ls /etc | grep -c doc_; true')).stdout).toBe('0\n');
  });

  it("takes a file the agent names out of the user's sandbox into a new private host file, exactly", async () => {
    await run(alice, 'printf "\\000\\001result\\377" > /workspace/out.bin; mkdir -p /root/r; echo home > /root/r/h.txt');
    for (const named of ['/workspace/out.bin', 'out.bin', './out.bin']) {
      const result = await get(alice, named);
      expect(result).toMatchObject({ path: '/workspace/out.bin', bytes: 9, scope: `user:telegram:${alice}` });
      expect(readFileSync(result.hostPath!)).toEqual(Buffer.from([0, 1, ...Buffer.from('result'), 0xff]));
      expect(statSync(result.hostPath!).mode & 0o777).toBe(0o600);
      expect(statSync(path.dirname(result.hostPath!)).mode & 0o777).toBe(0o700);
      expect(path.dirname(path.dirname(result.hostPath!))).toBe(outbox);
    }
    expect(readFileSync((await get(alice, '~/r/h.txt')).hostPath!, 'utf8')).toBe('home\n');
  });

  it("never gives one user's file to another, whatever the other names: host paths, .., links to the host folder", async () => {
    const aliceFile = path.join(workspaceOf(alice), 'out.bin');
    expect(existsSync(aliceFile)).toBe(true);
    const before = outboxFiles().length;
    for (const named of [aliceFile, `../../${path.relative('/', aliceFile)}`, `/workspace/../${path.relative('/', aliceFile)}`, attachmentPath]) {
      // Refused as a host path, or (this test's host folder is under /tmp) looked up in Bob's own /tmp and not found.
      const refused = await refusalOf(get(bob, named));
      expect(['FILE_REFUSED', 'FILE_NOT_FOUND']).toContain(refused.code);
    }
    // A link in Bob's workspace to Alice's host folder: a naive mapping of /workspace onto Bob's
    // host folder opened by path would follow it to Alice's bytes (shown first); in Bob's sandbox
    // it leads nowhere.
    await run(bob, `ln -s ${aliceFile} /workspace/alice-link; ln -s ${path.dirname(aliceFile)} /workspace/alice-dir`);
    expect(readFileSync(path.join(workspaceOf(bob), 'alice-link'))).toEqual(readFileSync(aliceFile));
    for (const named of ['alice-link', 'alice-dir/out.bin']) expect((await refusalOf(get(bob, named))).code).toBe('FILE_NOT_FOUND');
    expect(outboxFiles().length).toBe(before);
  });

  it('refuses links out of the user folders, FIFOs, devices, hard links, folders, large files and files holding a credential', async () => {
    await run(
      bob,
      [
        'ln -s /proc/1/environ /workspace/environ',
        'ln -s /etc/passwd /workspace/passwd',
        'mkfifo /workspace/fifo',
        'ln -s /dev/zero /workspace/zero',
        'echo x > /workspace/a; ln /workspace/a /workspace/b',
        'mkdir /workspace/folder',
        'dd if=/dev/zero of=/workspace/big bs=1M count=3 2>/dev/null',
        'echo "my token is $GITHUB_TOKEN" > /workspace/token.txt',
      ].join('; '),
    );
    const cases: Array<[string, string, RegExp]> = [
      ['environ', 'FILE_REFUSED', /leads outside the sandbox's \/workspace, \/root and \/tmp \(to \/proc\/1\/environ\)/],
      ['passwd', 'FILE_REFUSED', /leads outside/],
      ['fifo', 'FILE_REFUSED', /not a regular file/],
      ['zero', 'FILE_REFUSED', /not a regular file/],
      ['b', 'FILE_REFUSED', /more than one hard link/],
      ['folder', 'FILE_REFUSED', /is a folder/],
      ['big', 'FILE_TOO_LARGE', /larger than 2 MB/],
      ['token.txt', 'FILE_REFUSED', /holds the value of one of the sandbox's credentials/],
      ['missing.txt', 'FILE_NOT_FOUND', /does not exist/],
    ];
    const before = outboxFiles().length;
    for (const [named, code, message] of cases) {
      const started = Date.now();
      const refused = await refusalOf(get(bob, named));
      expect({ named, code: refused.code }).toEqual({ named, code });
      expect(refused.message).toMatch(message);
      expect(refused.message).not.toContain(tokens.bob);
      // A FIFO is refused at once, not after waiting for a writer.
      expect(Date.now() - started).toBeLessThan(30_000);
    }
    expect(outboxFiles().length).toBe(before);
    expect(serverLog()).not.toContain(tokens.bob);
  });

  it('never sends what a link swapped in while the file is read leads to', async () => {
    // The user swaps a regular file for a link to the sandbox's environment, as fast as the
    // shell can, while the gateway asks for it again and again.
    await run(
      bob,
      'echo plain > /workspace/plain; (while :; do ln -sf /proc/1/environ /workspace/race.tmp && mv -f /workspace/race.tmp /workspace/race; ' +
        'cp /workspace/plain /workspace/race.new && mv -f /workspace/race.new /workspace/race; done) >/dev/null 2>&1 & echo $! > /tmp/swapper',
    );
    const outcomes = { sent: 0, refused: 0 };
    try {
      for (let attempt = 0; attempt < 40; attempt++) {
        try {
          const result = await get(bob, 'race');
          expect(readFileSync(result.hostPath!, 'utf8')).toBe('plain\n');
          outcomes.sent++;
        } catch (error) {
          expect(error).toBeInstanceOf(SandboxSocketClientError);
          expect((error as Error).message).not.toContain(tokens.bob);
          outcomes.refused++;
        }
      }
    } finally {
      await run(bob, 'kill $(cat /tmp/swapper)');
    }
    expect(outcomes.sent + outcomes.refused).toBe(40);
    for (const bytes of outboxFiles()) {
      expect(bytes.toString('latin1')).not.toContain(tokens.bob);
      expect(bytes.toString('latin1')).not.toContain('GITHUB_TOKEN');
    }
  });

  it("keeps the session's folder: a file operation does not move the user's cd", async () => {
    await run(alice, 'cd /tmp');
    await get(alice, '/workspace/out.bin');
    expect((await run(alice, 'pwd')).stdout).toBe('/tmp\n');
  });
});
