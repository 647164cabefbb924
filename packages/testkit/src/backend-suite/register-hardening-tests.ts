import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { whileSaturating } from '../while-saturating.js';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';

/** Linux capability numbers (include/uapi/linux/capability.h), by the name the engines use. */
const CAPABILITY_BITS: Readonly<Record<string, number>> = {
  CHOWN: 0,
  DAC_OVERRIDE: 1,
  DAC_READ_SEARCH: 2,
  FOWNER: 3,
  FSETID: 4,
  KILL: 5,
  SETGID: 6,
  SETUID: 7,
  SETPCAP: 8,
  LINUX_IMMUTABLE: 9,
  NET_BIND_SERVICE: 10,
  NET_BROADCAST: 11,
  NET_ADMIN: 12,
  NET_RAW: 13,
  IPC_LOCK: 14,
  IPC_OWNER: 15,
  SYS_MODULE: 16,
  SYS_RAWIO: 17,
  SYS_CHROOT: 18,
  SYS_PTRACE: 19,
  SYS_PACCT: 20,
  SYS_ADMIN: 21,
  SYS_BOOT: 22,
  SYS_NICE: 23,
  SYS_RESOURCE: 24,
  SYS_TIME: 25,
  SYS_TTY_CONFIG: 26,
  MKNOD: 27,
  LEASE: 28,
  AUDIT_WRITE: 29,
  AUDIT_CONTROL: 30,
  SETFCAP: 31,
  MAC_OVERRIDE: 32,
  MAC_ADMIN: 33,
  SYSLOG: 34,
  WAKE_ALARM: 35,
  BLOCK_SUSPEND: 36,
  AUDIT_READ: 37,
  PERFMON: 38,
  BPF: 39,
  CHECKPOINT_RESTORE: 40,
};

const bitNames = (mask: bigint): string[] =>
  Object.entries(CAPABILITY_BITS)
    .filter(([, bit]) => (mask >> BigInt(bit)) & 1n)
    .map(([name]) => name);

/** Reads the sandbox's pids limit from cgroup v2 or v1. */
const PIDS_MAX = 'cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max';

/** Registers the hardening tests, each an attempt made from inside a sandbox. */
export function registerHardeningTests(fixture: BackendFixture): void {
  describe('hardening', () => {
    it('holds only the configured capabilities (no SYS_ADMIN, no NET_RAW) and no-new-privileges', { timeout: TEST_TIMEOUT_MS }, async () => {
      const status = await fixture.run('alice', 'cat /proc/self/status');
      expect(status.exitCode).toBe(0);
      const field = (name: string): string => {
        const value = new RegExp(`^${name}:\\s*(\\S+)$`, 'm').exec(status.stdout)?.[1];
        expect(value, `${name} in /proc/self/status`).toBeDefined();
        return value!;
      };
      const allowed = new Set(fixture.config('main').docker_cap_add.map((name) => name.replace(/^CAP_/, '')));
      for (const set of ['CapEff', 'CapPrm', 'CapBnd']) {
        const held = bitNames(BigInt(`0x${field(set)}`));
        expect(held, `${set} holds SYS_ADMIN`).not.toContain('SYS_ADMIN');
        expect(held, `${set} holds NET_RAW`).not.toContain('NET_RAW');
        expect(
          held.filter((name) => !allowed.has(name)),
          `${set} holds capabilities beyond docker_cap_add`,
        ).toEqual([]);
      }
      if (!fixture.config('main').docker_no_new_privileges) return;
      if (/^NoNewPrivs:/m.test(status.stdout)) {
        expect(field('NoNewPrivs')).toBe('1');
        return;
      }
      // A kernel that does not show the flag (gVisor's): the attack it stops, tried. A set-user-id
      // root copy of busybox, run as nobody: `su` finds itself root when the bit is honoured
      // (and asks for a password), and says it must be suid when it is not.
      const attack = await fixture.run(
        'alice',
        // The workspace is the user's own (0700): opened to nobody for the attempt, then closed again.
        'm=$(stat -c %a /workspace) && d=$(mktemp -d /workspace/suid.XXXXXX) && cp /bin/busybox "$d/busybox" && ' +
          'chmod 4755 "$d/busybox" && ln -s busybox "$d/su" && chmod 755 "$d" && chmod 711 /workspace; ' +
          'su -s /bin/sh nobody -c "$d/su root -c id </dev/null" 2>&1; chmod "$m" /workspace; rm -rf "$d"',
      );
      expect(attack.stdout, 'a set-user-id root binary run by nobody').toMatch(/must be suid/);
      expect(attack.stdout).not.toMatch(/uid=0/);
    });

    it('cannot mount file systems', { timeout: TEST_TIMEOUT_MS }, async () => {
      const result = await fixture.run('alice', 'mkdir -p /tmp/berth-mount && mount -t tmpfs berth /tmp/berth-mount');
      expect(result.exitCode).not.toBe(0);
      expect((await fixture.run('alice', 'grep -c " /tmp/berth-mount " /proc/mounts')).stdout.trim()).toBe('0');
    });

    it("has no container engine's socket anywhere", { timeout: TEST_TIMEOUT_MS }, async () => {
      const known = await fixture.run(
        'alice',
        'for socket in /var/run/docker.sock /run/docker.sock /run/podman/podman.sock /var/run/podman/podman.sock /run/containerd/containerd.sock; ' +
          'do [ -e "$socket" ] && echo "present: $socket"; done; true',
      );
      expect(known).toMatchObject({ exitCode: 0, stdout: '' });
      const sockets = await fixture.run('alice', 'find / -path /proc -prune -o -path /sys -prune -o -type s -print 2>/dev/null; true', { timeout: 60 });
      expect(sockets.stdout.split('\n').filter((line) => /docker|podman|containerd|crio/i.test(line))).toEqual([]);
    });

    // The bomb holds the machine-wide lock of saturating cases (another suite's bomb may hold it
    // first): the budget covers that wait too.
    it('a fork bomb stays inside its pids limit while another user keeps being answered, and its sandbox recovers', { timeout: 300_000 }, () =>
      whileSaturating(async () => {
        const limit = fixture.config('main').docker_pids_limit;
        // The engine's word where the limit sits above the sandbox's own cgroup (Kubernetes: per pod).
        const fromEngine = fixture.engine.pidsLimit ? await fixture.engine.pidsLimit(await fixture.containerOf('mallory')) : undefined;
        const visible = fromEngine === undefined ? (await fixture.run('mallory', PIDS_MAX)).stdout.trim() : String(fromEngine);
        const pidsMax = Number(visible);
        // Refuse to fire a fork bomb at a sandbox without a visible limit: it would take the machine down.
        expect(
          Number.isInteger(pidsMax) && pidsMax > 0,
          `pids.max ${fixture.engine.pidsLimit ? 'the engine reports' : 'inside the sandbox'} is ${JSON.stringify(visible)}; refusing to start the fork bomb`,
        ).toBe(true);
        expect(pidsMax).toBeLessThanOrEqual(limit);

        const bomb = fixture.run('mallory', 'b(){ while :; do b & done; }; b', { timeout: 5 }).then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
        await sleep(1_500);
        // Bob is never starved: every command answers, each within 30 s and most within 10 s. (One
        // slow answer while the bomb ramps up on a machine busy with other work is not starvation;
        // seen on Kubernetes with both cores busy beside: 13.9 s once, the others well inside.)
        const took: number[] = [];
        for (let round = 0; round < 5; round++) {
          const started = Date.now();
          const answer = await fixture.run('bob', `echo alive-${round}`, { timeout: 20 });
          expect(answer, `bob's command ${round} during the fork bomb`).toMatchObject({ exitCode: 0, stdout: `alive-${round}\n` });
          took.push(Date.now() - started);
          expect(took[round], `bob's command ${round} answered within 30 s`).toBeLessThan(30_000);
          await sleep(300);
        }
        const median = [...took].sort((a, b) => a - b)[2]!;
        expect(median, `the median of bob's answers during the fork bomb (each, ms: ${took.join(', ')}) is within 10 s`).toBeLessThan(10_000);
        const settled = await Promise.race([bomb, sleep(60_000).then(() => 'hung' as const)]);
        expect(settled, 'the fork bomb command returned within 60 s').not.toBe('hung');
        if (settled !== 'hung' && 'result' in settled) expect(settled.result.exitCode).not.toBe(0);

        // The sandbox is usable again once its timeout has killed the bomb: within a minute, on a
        // machine that is busy with other work too.
        const deadline = Date.now() + 60_000;
        let recovered = await fixture.run('mallory', 'echo recovered', { timeout: 10 }).catch((error: unknown) => ({ error }));
        while (!('exitCode' in recovered && recovered.exitCode === 0) && Date.now() < deadline) {
          await sleep(1_000);
          recovered = await fixture.run('mallory', 'echo recovered', { timeout: 10 }).catch((error: unknown) => ({ error }));
        }
        expect(recovered).toMatchObject({ exitCode: 0, stdout: 'recovered\n' });
      }),
    );
  });
}
