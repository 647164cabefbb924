import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTACK_ENGINES, randomTelegramUser, startAttackGateway, UNDER_GVISOR, type AttackGateway } from './support/attack-gateway.js';

// container_disk as a hard limit per user, tried by filling it from inside the sandbox, on Docker
// and on rootful Podman: the user's own disk (workspace and home together) fills and says "No
// space left on device" while another user keeps writing; the user's files survive; the root
// file system is read-only and the writable places besides the user's disk are bounded tmpfs.
const DISK_MB = 64;
const TMP_MB = 16;

describe.each(ATTACK_ENGINES)('disk on %s: one user cannot fill the host', (backend) => {
  let gateway: AttackGateway;
  const filler = randomTelegramUser();
  const neighbour = randomTelegramUser();

  beforeAll(async () => {
    gateway = await startAttackGateway({ config: { backend, container_disk: DISK_MB, docker_tmp_size: TMP_MB, docker_network: false } });
    await gateway.run(filler, 'echo precious > /workspace/keep.txt; echo dotfile > /root/.profile-note');
  });

  afterAll(async () => {
    await gateway?.cleanup();
  });

  it(`stops the user at container_disk (${DISK_MB} MB) across workspace and home, while another user keeps writing`, async () => {
    const workspace = await gateway.run(
      filler,
      `dd if=/dev/zero of=/workspace/fill bs=1M count=${DISK_MB * 2} 2>&1 | grep -i 'space'; ls -l /workspace/fill | awk '{print "size=" $5}'`,
      { timeout: 60 },
    );
    expect(workspace.output).toMatch(/No space left on device/);
    expect(Number(/size=(\d+)/.exec(workspace.output)?.[1])).toBeLessThanOrEqual(DISK_MB * 1024 * 1024);
    const home = await gateway.run(filler, 'dd if=/dev/zero of=/root/more bs=1M count=8 2>&1 | grep -ci "space"');
    expect(home.output).toBe('1\n');
    const other = await gateway.run(neighbour, "dd if=/dev/zero of=/workspace/ok bs=1M count=16 2>/dev/null; ls -l /workspace/ok | awk '{print $5}'");
    expect(other.output).toBe(`${16 * 1024 * 1024}\n`);
  });

  it("keeps the user's files, on the host as in the sandbox, and works again once they delete something", async () => {
    const { workspace, home } = gateway.folderOf(filler);
    expect(readFileSync(path.join(workspace, 'keep.txt'), 'utf8')).toBe('precious\n');
    expect(readFileSync(path.join(home, '.profile-note'), 'utf8')).toBe('dotfile\n');
    const again = await gateway.run(
      filler,
      'rm -f /workspace/fill /root/more; echo fresh > /workspace/fresh.txt && cat /workspace/keep.txt /workspace/fresh.txt',
    );
    expect(again.output).toBe('precious\nfresh\n');
  });

  it("shows each sandbox's use against the limit (berth ls)", async () => {
    await gateway.run(filler, 'dd if=/dev/zero of=/workspace/twenty bs=1M count=20 2>/dev/null; sync');
    const sandboxes = await gateway.berth.backend.list();
    const mine = sandboxes.find((sandbox) => sandbox.scopeKey === gateway.folderOf(filler).scopeKey);
    expect(mine?.disk?.limitMb).toBe(DISK_MB);
    expect(mine?.disk?.usedMb).toBeGreaterThanOrEqual(19);
    expect(mine?.disk?.usedMb).toBeLessThan(DISK_MB);
  });

  it(`keeps the container's own layer read-only, and /tmp and /var/tmp within ${TMP_MB} MB`, async () => {
    const layer = await gateway.run(
      filler,
      'for f in /usr/fill /etc/fill /var/fill /bin/fill; do touch $f 2>&1; done; ' +
        'for f in /usr/fill /etc/fill /var/fill /bin/fill; do [ -e $f ] && echo "made $f"; done; true',
    );
    expect(layer.output.trim().split('\n')).toHaveLength(4);
    // gVisor refuses a path its read-only root made for a mount (/var) as "Operation not permitted".
    for (const line of layer.output.trim().split('\n'))
      expect(line).toMatch(UNDER_GVISOR ? /Read-only file system|Operation not permitted/ : /Read-only file system/);
    for (const place of ['/tmp', '/var/tmp']) {
      const filled = await gateway.run(
        filler,
        `dd if=/dev/zero of=${place}/fill bs=1M count=${TMP_MB * 4} 2>&1 | grep -ci space; ls -l ${place}/fill | awk '{print "size=" $5}'; rm -f ${place}/fill`,
      );
      expect(filled.output, place).toMatch(/^1\n/);
      expect(Number(/size=(\d+)/.exec(filled.output)?.[1]), place).toBeLessThanOrEqual(TMP_MB * 1024 * 1024);
    }
  });

  it('purging the user deletes their disk with their files, and only theirs', async () => {
    const request = gateway.berth.request({ session: { platform: neighbour.platform, userId: neighbour.userId } });
    const image = path.join(gateway.sandboxDir, 'disks', path.basename(request.paths.root), `${path.basename(request.paths.folder)}.ext4`);
    expect(existsSync(image)).toBe(true);
    await gateway.berth.backend.remove(request.scope.key, { purge: true, paths: request.paths });
    expect(existsSync(image)).toBe(false);
    expect(existsSync(request.paths.folder)).toBe(false);
    expect(readFileSync(path.join(gateway.folderOf(filler).workspace, 'keep.txt'), 'utf8')).toBe('precious\n');
  });
});
