import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomSecret, randomTelegramUser, randomWhatsAppUser, startAttackGateway, type AttackGateway } from './support/attack-gateway.js';

// Two users of one gateway: the victim (Telegram) keeps files in its workspace and home; the
// attacker (WhatsApp) tries every way to read, write, list or delete them.
const victim = randomTelegramUser();
const attacker = randomWhatsAppUser();
const workspaceMarker = randomSecret('victim-workspace');
const homeMarker = randomSecret('victim-home');
let gateway: AttackGateway;
let victimFolder: ReturnType<AttackGateway['folderOf']>;

/** What the victim sees of its own files: the markers must still be there after every attack. */
async function victimFilesIntact(): Promise<void> {
  const own = await gateway.run(victim, 'cat /workspace/notes.txt /root/.secret; ls -a /workspace');
  expect(own.returncode).toBe(0);
  expect(own.output).toContain(workspaceMarker);
  expect(own.output).toContain(homeMarker);
  expect(own.output).not.toMatch(/planted|hl-|link-/);
  expect(readdirSync(victimFolder.workspace).sort()).toEqual(['notes.txt', 'sub']);
}

beforeAll(async () => {
  gateway = await startAttackGateway();
  victimFolder = gateway.folderOf(victim);
  const setup = await gateway.run(
    victim,
    `echo ${workspaceMarker} > /workspace/notes.txt && mkdir -p /workspace/sub && ` +
      `echo ${homeMarker} > /root/.secret && (cd /workspace/sub && sleep 300 >/dev/null 2>&1 &) && echo ready`,
  );
  expect(setup).toEqual({ output: 'ready\n', returncode: 0 });
  expect((await gateway.run(attacker, 'echo attacker-ready')).output).toBe('attacker-ready\n');
});

afterAll(async () => {
  await gateway?.cleanup();
});

describe("files: one user cannot reach another user's workspace or home", () => {
  it("reads by the host path of the other user's folder", async () => {
    const result = await gateway.run(
      attacker,
      `cat ${victimFolder.workspace}/notes.txt ${victimFolder.home}/.secret; ls -la ${gateway.sandboxDir} ${path.dirname(victimFolder.folder)}`,
    );
    expect(result.returncode).not.toBe(0);
    expect(result.output).not.toContain(workspaceMarker);
    expect(result.output).not.toContain(homeMarker);
    // Every line is a refusal: the sandbox root and the victim's folder do not exist in the container.
    const lines = result.output.trim().split('\n');
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(/No such file or directory$/);
  });

  it("lists by .. out of /workspace and /root, and from the container's root", async () => {
    const result = await gateway.run(
      attacker,
      'ls -la /workspace/.. /workspace/../.. /root/../..; cd /workspace/../../../..; pwd; ' +
        'ls -R / 2>/dev/null | grep -c notes.txt; cat /workspace/../../../../*/workspace/notes.txt',
    );
    expect(result.output).not.toContain(workspaceMarker);
    expect(result.output).not.toContain(path.basename(victimFolder.folder));
    expect(result.output).toMatch(/^\/\n0\n/m);
  });

  it("writes to the other user's host path: the write lands in the attacker's own container, never in the victim's folder", async () => {
    await gateway.run(
      attacker,
      `mkdir -p ${victimFolder.workspace} ${victimFolder.home}; echo planted > ${victimFolder.workspace}/planted; ` +
        `echo planted > ${victimFolder.home}/planted; echo planted > /workspace/../../${path.basename(victimFolder.folder)}-planted`,
    );
    expect(existsSync(path.join(victimFolder.workspace, 'planted'))).toBe(false);
    expect(existsSync(path.join(victimFolder.home, 'planted'))).toBe(false);
    expect(readdirSync(path.dirname(victimFolder.folder)).filter((name) => name.includes('planted'))).toEqual([]);
    await victimFilesIntact();
  });

  it("deletes by host path and by ..: the victim's files survive", async () => {
    await gateway.run(
      attacker,
      `rm -rf ${victimFolder.folder} ${victimFolder.workspace}/notes.txt /workspace/../${path.basename(victimFolder.folder)} ` +
        '/workspace/../../docker 2>&1; find / -name notes.txt -xdev 2>/dev/null | xargs rm -f',
    );
    await victimFilesIntact();
  });

  it("follows a symbolic link to the victim's host folder created inside its own workspace", async () => {
    const result = await gateway.run(
      attacker,
      `ln -s ${victimFolder.workspace} /workspace/link-abs; ln -s ../../${path.basename(victimFolder.folder)}/workspace /workspace/link-rel; ` +
        `ln -s ${victimFolder.home} /root/link-home; cat /workspace/link-abs/notes.txt /workspace/link-rel/notes.txt /root/link-home/.secret; ` +
        'echo planted > /workspace/link-abs/planted; ls /workspace/link-abs/',
    );
    expect(result.output).not.toContain(workspaceMarker);
    expect(result.output).not.toContain(homeMarker);
    // On the host the link exists in the attacker's folder and points at the victim's, which is
    // exactly why nothing on the host may follow it: the victim's folder holds no planted file.
    expect(existsSync(path.join(victimFolder.workspace, 'planted'))).toBe(false);
    await victimFilesIntact();
  });

  it("a symbolic link planted in the attacker's workspace is not followed when the attacker's sandbox is purged", async () => {
    const attackerFolder = gateway.folderOf(attacker);
    await gateway.run(attacker, `ln -s ${victimFolder.workspace} /workspace/link-purge; ln -s ${victimFolder.folder} /root/link-purge-home`);
    await gateway.berth.backend.remove(attackerFolder.scopeKey, {
      purge: true,
      paths: gateway.berth.resolver.forScope(
        gateway.berth.resolver.scopeOf({ identity: gateway.berth.resolver.registry.resolve(attacker.platform, attacker.userId) }),
      ).paths,
    });
    expect(existsSync(attackerFolder.folder)).toBe(false);
    await victimFilesIntact();
  });

  it("hard-links the victim's file, or any file across the mounts, into its own workspace", async () => {
    const result = await gateway.run(
      attacker,
      `ln ${victimFolder.workspace}/notes.txt /workspace/hl-host 2>&1; echo "host=$?"; echo mine > /root/own; ` +
        'ln /root/own /workspace/hl-cross 2>&1; echo "cross=$?"; ln /etc/passwd /workspace/hl-etc 2>&1; echo "etc=$?"',
    );
    expect(result.output).toMatch(/host=[1-9]/);
    expect(result.output).toMatch(/cross=[1-9]/);
    expect(result.output).toMatch(/etc=[1-9]/);
    expect(result.output).not.toContain(workspaceMarker);
  });

  it('reads through /proc/<pid>/root and /proc/<pid>/cwd of every process it can see', async () => {
    const result = await gateway.run(
      attacker,
      'for p in /proc/[0-9]*; do readlink $p/cwd; ls $p/root/workspace $p/cwd; ' +
        'cat $p/root/workspace/notes.txt $p/root/root/.secret $p/cwd/../notes.txt; done 2>/dev/null; ps -o pid,args',
    );
    expect(result.output).not.toContain(workspaceMarker);
    expect(result.output).not.toContain(homeMarker);
    expect(result.output).not.toContain('/workspace/sub');
    expect(result.output).not.toContain('sleep 300');
  });

  it("the victim's folder on the host holds only what the victim wrote", () => {
    expect(readFileSync(path.join(victimFolder.workspace, 'notes.txt'), 'utf8')).toBe(`${workspaceMarker}\n`);
    expect(readdirSync(victimFolder.home)).toEqual(['.secret']);
  });
});
