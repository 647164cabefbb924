import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  docker,
  inSandboxNetns,
  randomTelegramUser,
  randomWhatsAppUser,
  SETUID_ATTEMPT,
  startAttackGateway,
  UNDER_GVISOR,
  type AttackGateway,
} from './support/attack-gateway.js';

// The victim keeps a process and a TCP listener running; the attacker, on the same gateway and
// the same Berth network, tries to see, signal or reach them, the engine, or more privileges.
const victim = randomTelegramUser();
const attacker = randomWhatsAppUser();
const PORT = 8080;
let gateway: AttackGateway;
let victimAddress: string;

/** Capability numbers (linux/capability.h) the sandbox must not hold. */
const FORBIDDEN_CAPABILITIES = { NET_ADMIN: 12, NET_RAW: 13, SYS_MODULE: 16, SYS_PTRACE: 19, SYS_ADMIN: 21 } as const;

/** Whether a TCP connection to `host:port` opens within `timeoutMs`. */
function connects(host: string, port: number, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (result: boolean): void => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function victimProcesses(): Promise<string> {
  return (await gateway.run(victim, 'ps -o pid,args')).output;
}

beforeAll(async () => {
  gateway = await startAttackGateway();
  const setup = await gateway.run(
    victim,
    "printf '#!/bin/sh\\necho victim-listener\\n' > /workspace/reply.sh && chmod +x /workspace/reply.sh && " +
      `(sleep 4242 >/dev/null 2>&1 &) && (nc -ll -p ${PORT} -e /workspace/reply.sh >/dev/null 2>&1 &) && echo ok`,
  );
  expect(setup.output).toBe('ok\n');
  await gateway.run(attacker, 'true');
  const container = await gateway.containerOf(victim);
  const info = await docker.getContainer(container!.Id).inspect();
  victimAddress = Object.values(info.NetworkSettings.Networks)[0]?.IPAddress ?? '';
  expect(victimAddress).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
});

afterAll(async () => {
  await gateway?.cleanup();
});

describe("processes: one user cannot see or signal another user's processes", () => {
  it("ps and /proc show only the attacker's own processes", async () => {
    const result = await gateway.run(attacker, 'ps -o pid,args; cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " "');
    expect(result.output).not.toContain('4242');
    expect(result.output).not.toContain('reply.sh');
    expect(await victimProcesses()).toContain('sleep 4242');
  });

  it("kill -9 -1, and kill of the victim's host pids, leave the victim's processes running", async () => {
    const container = await gateway.containerOf(victim);
    // Under gVisor the engine's list is wrong (docs/gvisor.md) and the victim's processes live in
    // gVisor's kernel: its host processes are gVisor's own, the main one of which the engine names.
    const top = UNDER_GVISOR ? undefined : ((await docker.getContainer(container!.Id).top({ ps_args: '-o pid,args' })) as { Processes?: string[][] });
    const hostPids = top
      ? (top.Processes ?? []).filter((row) => /sleep 4242|nc -ll/.test(row.join(' '))).map((row) => row[0])
      : [String((await docker.getContainer(container!.Id).inspect()).State.Pid)];
    expect(hostPids.length).toBeGreaterThanOrEqual(UNDER_GVISOR ? 1 : 2);
    await gateway.attempt(attacker, `kill -9 ${hostPids.join(' ')} 2>&1; kill -9 -1`);
    const processes = await victimProcesses();
    expect(processes).toContain('sleep 4242');
    expect(processes).toContain('reply.sh');
    // The attacker's own sandbox comes back after it killed its own shell.
    expect((await gateway.run(attacker, 'echo back')).output).toBe('back\n');
  });
});

describe('network: no way from one sandbox to another, or to the engine', () => {
  it("a TCP connection to the other user's sandbox on the Berth network fails (while the gateway host reaches it)", async () => {
    const result = await gateway.run(
      attacker,
      `nc -w 2 ${victimAddress} ${PORT} </dev/null; echo "rc=$?"; wget -T 2 -q -O- http://${victimAddress}:${PORT}/ 2>&1; echo "wget=$?"`,
    );
    expect(result.output).not.toContain('victim-listener');
    expect(result.output).toMatch(/rc=[1-9]/);
    expect(result.output).toMatch(/wget=[1-9]/);
    // Control: the listener is up, so the refusal above is the network's isolation.
    expect(await connects(victimAddress, PORT)).toBe(true);
  });

  it('no engine socket inside, and the engine API is not reachable over TCP on the bridge gateway', async () => {
    const result = await gateway.run(
      attacker,
      'ls -la /var/run/docker.sock /run/docker.sock /run/podman/podman.sock /var/run/containerd 2>&1; ' +
        'find / -xdev -name "*.sock" 2>/dev/null; gw=$(ip route | awk "/default/ {print \\$3}"); echo "gateway=$gw"; ' +
        'for port in 2375 2376; do wget -T 2 -q -O- http://$gw:$port/version 2>&1; echo "port$port=$?"; done',
    );
    expect(result.output).not.toMatch(/^s/m);
    expect(result.output).toMatch(/gateway=\d+\.\d+\.\d+\.\d+/);
    expect(result.output).toMatch(/port2375=[1-9]/);
    expect(result.output).toMatch(/port2376=[1-9]/);
    expect(result.output).not.toMatch(/ApiVersion/);
  });
});

describe('names: nothing a sandbox can see says who else is there, or how many', () => {
  it('reverse and forward DNS lookups of another sandbox answer nothing; the hostname is the same for everyone', async () => {
    const victimName = (await gateway.containerOf(victim))!.Names[0]!.replace(/^\//, '');
    const result = await gateway.run(
      attacker,
      `hostname; nslookup ${victimAddress} 127.0.0.11 2>&1; echo "reverse=$?"; ` +
        `nslookup ${victimName} 127.0.0.11 2>&1; echo "forward=$?"; cat /etc/hosts /etc/hostname 2>&1`,
    );
    expect(result.output.split('\n')[0]).toBe('sandbox');
    expect(result.output).toMatch(/reverse=[1-9]/);
    expect(result.output).toMatch(/forward=[1-9]/);
    // No answer at all: no name for the address, no address for the name (busybox prints
    // "Name:" and "name =" lines for answers; its refusals only repeat what was asked).
    expect(result.output).not.toMatch(/^Name:|name = /m);
    expect(result.output.split('\n').filter((line) => line.includes(victimName) && !line.includes("can't find"))).toEqual([]);
    for (const identifying of [String(victim.userId), 'telegram', 'whatsapp']) expect(result.output).not.toContain(identifying);
  });

  it('the sandbox is alone on its network: a scan of its subnet finds only its gateway', async () => {
    const result = await gateway.run(
      attacker,
      `net=$(ip -4 -o addr show eth0 | awk "{print \\$4}"); echo "net=$net"; base=\${net%.*}; for i in 0 1 2 3 4 5 6 7; ` +
        'do nc -w 1 $base.$i 9 </dev/null >/dev/null 2>&1; done; ' +
        `${UNDER_GVISOR ? 'true' : 'ip neigh show dev eth0 | grep -v FAILED | grep -vc INCOMPLETE'}`,
    );
    expect(result.output).toMatch(/^net=\d+\.\d+\.\d+\.\d+\/29$/m);
    // Only the gateway answered ARP; the victim is on a network of its own. (gVisor has no
    // neighbour table inside: the namespace's own, on the host, is the one its sockets used.)
    const neighbours = UNDER_GVISOR
      ? await inSandboxNetns((await gateway.containerOf(attacker))!.Id, ['sh', '-c', 'ip neigh show dev eth0 | grep -v FAILED | grep -vc INCOMPLETE || true'])
      : result.output;
    expect(neighbours.trim().split('\n').at(-1)).toBe('1');
  });

  it('container and network names hold no platform, id or user count, seen from outside', async () => {
    for (const sender of [victim, attacker]) {
      const container = (await gateway.containerOf(sender))!;
      const name = container.Names[0]!.replace(/^\//, '');
      expect(name).toMatch(/^berth-[0-9a-f]{24}$/);
      // The sandbox's own network is named at random: neither its name nor its container's says whose it is.
      expect(container.HostConfig.NetworkMode).toMatch(/^berth-net-[0-9a-f]{16}$/);
      expect(container.Labels['dev.berth.network']).toBe(container.HostConfig.NetworkMode);
    }
  });
});

describe('privileges: no escalation inside the sandbox', () => {
  it('no setuid file can even be made: the root is read-only and every writable place is nosuid', async () => {
    const result = await gateway.run(attacker, "touch /suid 2>&1; grep -E ' (/workspace|/root|/tmp|/var/tmp|/run) ' /proc/mounts");
    expect(result.output).toMatch(/Read-only file system/);
    if (UNDER_GVISOR) {
      // gVisor's /proc/mounts does not show nosuid: the attack itself, in every writable place.
      // The set-user-id copy runs and gets nothing ("must be suid"), or, on the engine's noexec
      // tmpfs (/tmp, /var/tmp: runc's too), does not run at all.
      for (const place of ['/workspace', '/root', '/tmp', '/var/tmp']) {
        const attempt = await gateway.run(attacker, SETUID_ATTEMPT(place));
        expect(attempt.output, place).toMatch(place.endsWith('tmp') ? /must be suid|Permission denied/ : /must be suid/);
        expect(attempt.output, place).not.toMatch(/uid=0/);
      }
      return;
    }
    const mounts = result.output.split('\n').filter((line) => / \/(workspace|root|tmp|var\/tmp|run) /.test(line));
    expect(mounts.map((line) => line.split(' ')[1]).sort()).toEqual(['/root', '/run', '/tmp', '/var/tmp', '/workspace']);
    for (const line of mounts) expect(line, line).toMatch(/\bnosuid\b/);
  });

  it('with a writable root (docker_read_only: false), a setuid copy of busybox gives nobody no privileges (no-new-privileges on every process)', async () => {
    const writable = await startAttackGateway({ config: { docker_read_only: false, docker_network: false } });
    const result = await writable.run(
      attacker,
      'mkdir -p /suid && cp /bin/busybox /suid/busybox && chmod u+s /suid/busybox && ls -l /suid/busybox; ' +
        'su -s /bin/sh nobody -c "/suid/busybox sh -c \'id -u; grep -E \\"^(Uid|NoNewPrivs)\\" /proc/self/status\'" 2>&1; ' +
        'grep -h NoNewPrivs /proc/[0-9]*/status | sort -u',
    );
    expect(result.output).toMatch(/^-rws/m);
    expect(result.output).toMatch(/^65534$/m);
    expect(result.output).not.toMatch(/^Uid:\s+\S+\s+0\s/m);
    if (UNDER_GVISOR) {
      // gVisor's /proc does not show NoNewPrivs: the set-user-id root su, tried, gives nobody nothing.
      expect((await writable.run(attacker, SETUID_ATTEMPT('/suid'))).output).toMatch(/must be suid/);
    } else expect(result.output.match(/NoNewPrivs:\s+\d/g)?.every((line) => line.endsWith('1'))).toBe(true);
    await writable.cleanup();
  });

  it('mount fails: tmpfs, bind and remounting /proc/sys or the workspace', async () => {
    const result = await gateway.run(
      attacker,
      'mkdir -p /workspace/m; for attempt in "mount -t tmpfs none /workspace/m" "mount --bind / /workspace/m" "mount -o remount,rw ' +
        '/proc/sys" "mount -o remount,rw /sys" "mount -t proc proc /workspace/m"; do $attempt 2>/dev/null; echo "$attempt => $?"; done',
    );
    const lines = result.output.trim().split('\n');
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(line).toMatch(/=> [1-9]\d*$/);
  });

  it('raw sockets fail: ping and arping need NET_RAW', async () => {
    const result = await gateway.run(
      attacker,
      'ping -c 1 -W 1 127.0.0.1 >/dev/null 2>&1; echo "ping=$?"; arping -c 1 -w 1 -I eth0 127.0.0.1 >/dev/null 2>&1; echo "arping=$?"',
    );
    expect(result.output).toMatch(/ping=[1-9]/);
    expect(result.output).toMatch(/arping=[1-9]/);
  });

  it('the effective and bounding capability sets lack SYS_ADMIN, NET_ADMIN, NET_RAW, SYS_PTRACE and SYS_MODULE', async () => {
    const result = await gateway.run(attacker, 'grep -E "^Cap(Eff|Bnd|Prm)" /proc/self/status');
    const sets = Object.fromEntries(
      result.output
        .trim()
        .split('\n')
        .map((line) => line.split(/:\s+/) as [string, string]),
    );
    expect(Object.keys(sets).sort()).toEqual(['CapBnd', 'CapEff', 'CapPrm']);
    for (const [set, hex] of Object.entries(sets)) {
      const bits = BigInt(`0x${hex}`);
      const held = Object.entries(FORBIDDEN_CAPABILITIES)
        .filter(([, bit]) => (bits >> BigInt(bit)) & 1n)
        .map(([name]) => name);
      expect({ set, held }).toEqual({ set, held: [] });
    }
  });

  it('writing /proc/sys, /sys and its own cgroup limits fails', async () => {
    const result = await gateway.run(
      attacker,
      'for file in /proc/sys/net/ipv4/ip_forward /proc/sys/kernel/pid_max /proc/sys/vm/overcommit_memory /sys/fs/cgroup/memory/memory.limit_in_bytes ' +
        '/sys/fs/cgroup/pids/pids.max /sys/kernel/mm/transparent_hugepage/enabled; do v=$(cat $file 2>/dev/null | head -c 64); ' +
        '(echo "$v" > $file) 2>/dev/null; echo "$file => $?"; done; (echo -1 > /sys/fs/cgroup/memory/memory.limit_in_bytes) ' +
        '2>/dev/null; echo "raise => $?"',
    );
    const lines = result.output.trim().split('\n');
    expect(lines).toHaveLength(7);
    for (const line of lines) expect(line).toMatch(/=> [1-9]\d*$/);
  });
});
