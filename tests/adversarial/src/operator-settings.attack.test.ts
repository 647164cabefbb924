import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { afterAll, describe, expect, it } from 'vitest';
import { ATTACK_IMAGE, randomTelegramUser, startAttackGateway, temporarySandboxDir, type AttackGateway } from './support/attack-gateway.js';

// Settings an operator might write that undo the isolation, and the sizes that must fit the
// host: `berth doctor` (the built CLI, as an operator runs it) must name each risk with its key
// and fail; register() must log the same; a new user past docker_max_sandboxes is refused in one
// line with nothing created.
const CLI = path.resolve(import.meta.dirname, '..', '..', '..', 'apps', 'gateway-plugin', 'dist', 'cli.js');
const home = temporarySandboxDir('operator');
const gateways: AttackGateway[] = [];

afterAll(async () => {
  for (const gateway of gateways) await gateway.cleanup();
  await releaseDisksUnder(home);
  rmSync(home, { recursive: true, force: true });
});

const hermesFolder = (): string => path.join(home, `hermes-${Math.random().toString(36).slice(2)}`);

function doctor(config: string, folder = hermesFolder()): Promise<{ status: number; stdout: string }> {
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, 'config.yaml'), config);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, 'doctor'],
      { env: { PATH: process.env.PATH ?? '', HOME: folder, HERMES_HOME: folder, TERMINAL_SANDBOX_DIR: path.join(folder, 'sandboxes') }, timeout: 60_000 },
      (error, stdout) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout }),
    );
  });
}

describe('settings that undo the isolation, and capacity', () => {
  it('berth doctor names every risky setting with its key and the risk, and exits non-zero', async () => {
    const risky = [
      'terminal:',
      `  docker_image: ${ATTACK_IMAGE}`,
      '  docker_volumes: ["/var/run/docker.sock:/var/run/docker.sock", "/:/host:ro"]',
      '  docker_cap_add: [CHOWN, SYS_ADMIN, NET_ADMIN, SYS_PTRACE, SYS_MODULE]',
      '  docker_no_new_privileges: false',
      // A runtime no engine here has (runsc is installed by the set-up: docs/gvisor.md).
      '  docker_runtime: kata-missing',
      '  docker_read_only: false',
      '',
    ].join('\n');
    const run = await doctor(risky);
    expect(run.status).toBe(1);
    const problems = run.stdout.split('\n').filter((line) => /^PROBLEM\s+isolation:/.test(line));
    const expected: Array<[string, RegExp]> = [
      ['terminal.docker_volumes.0', /engine's socket/],
      ['terminal.docker_volumes.1', /whole root file system/],
      ['terminal.docker_cap_add', /SYS_ADMIN/],
      ['terminal.docker_cap_add', /NET_ADMIN/],
      ['terminal.docker_cap_add', /SYS_PTRACE/],
      ['terminal.docker_cap_add', /SYS_MODULE/],
      ['terminal.docker_no_new_privileges', /setuid/],
      ['terminal.docker_runtime', /kata-missing is not installed on the engine \(it has [^)]*runsc/],
      ['terminal.docker_read_only', /writable layer unbounded/],
    ];
    for (const [key, risk] of expected)
      expect(
        problems.some((line) => line.includes(key) && risk.test(line)),
        `${key} ${risk}`,
      ).toBe(true);
    expect(run.stdout).not.toMatch(/all is well/);
  });

  it('berth doctor follows links and parent folders: a link to the engine socket, a link to the sandbox root and /var are each named', async () => {
    const folder = hermesFolder();
    const sandboxes = path.join(folder, 'sandboxes');
    mkdirSync(sandboxes, { recursive: true });
    const tag = Math.random().toString(36).slice(2);
    const socketLink = path.join(home, `tools-${tag}.d`);
    const rootLink = path.join(home, `shared-${tag}`);
    const harmless = path.join(home, `data-${tag}`);
    symlinkSync('/var/run/docker.sock', socketLink);
    symlinkSync(sandboxes, rootLink);
    mkdirSync(harmless);
    const volumes = [`${socketLink}:/opt/tools`, `${rootLink}:/shared:ro`, '/var:/hostvar:ro', `${harmless}:/data:ro`];
    const run = await doctor([`terminal:`, `  docker_image: ${ATTACK_IMAGE}`, `  docker_volumes: ${JSON.stringify(volumes)}`, ''].join('\n'), folder);
    expect(run.status).toBe(1);
    const problems = run.stdout.split('\n').filter((line) => /^PROBLEM\s+isolation:/.test(line));
    expect(problems.find((line) => line.includes('terminal.docker_volumes.0'))).toMatch(/engine's socket.*leads to \/run\/docker\.sock/);
    expect(problems.find((line) => line.includes('terminal.docker_volumes.1'))).toMatch(/the sandbox root .*every user's workspace and home/);
    expect(problems.find((line) => line.includes('terminal.docker_volumes.2'))).toMatch(/\/var, which holds the container engine's socket or state/);
    expect(problems.some((line) => line.includes('terminal.docker_volumes.3'))).toBe(false);
  });

  it('berth doctor with the defaults finds no isolation risk, and says how many sandboxes may run and why', async () => {
    const run = await doctor(`terminal:\n  docker_image: ${ATTACK_IMAGE}\n`);
    expect(run.stdout).toMatch(/^ok\s+isolation: no setting undoes/m);
    // The runtime, and what the operator could choose instead.
    expect(run.stdout).toMatch(
      /^ok\s+runtime: sandboxes run under runc \(the engine's default, runc version [\d.]+\S*\), sharing this host's kernel with each other; the engine offers .*runsc/m,
    );
    // Root on a local engine with cgroupfs: the shared bound holds, so no count of summed limits.
    expect(run.stdout).toMatch(
      /^ok\s+capacity: any number of sandboxes may run at once within their shared bound \(\d+ MB, \d+ pids\); when it is 85 % used, the least recently used idle ones that hold memory stop \(docker_max_running: auto\)$/m,
    );
    // Without the bound, the count the host holds with every limit added up, as before.
    const unbound = await doctor(`terminal:\n  docker_image: ${ATTACK_IMAGE}\n  docker_cgroup_parent: ""\n`);
    expect(unbound.stdout).toMatch(
      /^ok\s+capacity: up to \d+ at once \(docker_max_running: auto\): their limits add up to \d+ of \d+ MB of memory, [\d.]+ of \d+ CPUs and \d+ of \d+ pids \(pid_max\)/m,
    );
    expect(unbound.stdout).toMatch(/^warning\s+engine: terminal\.docker_cgroup_parent is "": sandboxes share no bound/m);
    expect(run.stdout).toMatch(/disk: each sandbox has a disk of 51200 MB \(container_disk\)/);
  });

  it('berth doctor says which runtime sandboxes use, that gVisor is a kernel of their own, and what Berth does differently under it', async () => {
    const run = await doctor(`terminal:\n  docker_image: ${ATTACK_IMAGE}\n  docker_runtime: runsc\n`);
    expect(run.stdout).toMatch(
      /^ok\s+runtime: sandboxes run under runsc \(docker_runtime: gVisor, runsc version \S+\), a kernel of its own for each sandbox; the engine offers .*runc/m,
    );
    expect(run.stdout).toMatch(/^ok\s+runtime: under gVisor, shells start through the engine's exec/m);
    expect(run.stdout).not.toMatch(/^(PROBLEM|warning)\s+runtime:/m);
    expect(run.stdout).toMatch(/^ok\s+isolation: no setting undoes/m);
  });

  it('register() logs the same risks as warnings', async () => {
    const gateway = await startAttackGateway({ config: { docker_cap_add: ['CHOWN', 'SYS_ADMIN'], docker_no_new_privileges: false } });
    gateways.push(gateway);
    expect(gateway.logs.filter((line) => line.startsWith('warn ') && /terminal\.docker_cap_add: SYS_ADMIN/.test(line))).toHaveLength(1);
    expect(gateway.logs.filter((line) => line.startsWith('warn ') && /terminal\.docker_no_new_privileges/.test(line))).toHaveLength(1);
  });

  it('refuses a new user past docker_max_sandboxes with one line naming the key, and creates nothing for them', async () => {
    const gateway = await startAttackGateway({ config: { docker_max_sandboxes: 2, docker_network: false } });
    gateways.push(gateway);
    const [first, second, third] = [randomTelegramUser(), randomTelegramUser(), randomTelegramUser()];
    await gateway.run(first, 'true');
    await gateway.run(second, 'true');
    const refused = await gateway.attempt(third, 'echo should-not-run');
    expect(refused).toBeInstanceOf(Error);
    const message = (refused as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toMatch(/terminal\.docker_max_sandboxes \(2\)/);
    expect(await gateway.containerOf(third)).toBeUndefined();
    expect((await gateway.containers()).length).toBe(2);
    // Nothing on the host either: no folder of theirs (workspace, home, disk).
    expect(existsSync(gateway.folderOf(third).folder)).toBe(false);
    // Existing users are untouched.
    expect((await gateway.run(first, 'echo still')).output).toBe('still\n');
  });
});
