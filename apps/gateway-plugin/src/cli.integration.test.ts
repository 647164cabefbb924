import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEST_IMAGE as IMAGE, expectSuccess, uid, useCliHarness } from './testing/cli-harness.js';
import { BERTH_CLI as CLI } from './testing/run-berth-cli.js';

// The CLI as a user runs it: the built dist/cli.js in a subprocess, against the real engine
// (testing/cli-harness.ts). Its errors: cli-errors.integration.test.ts; berth demo:
// cli-demo.integration.test.ts.
const { root, home, sandboxes, berth, writeConfig, containersUnder } = useCliHarness();
const alice = uid();
const bob = uid();
const task = `cli-it-${randomInt(1e9)}`;

const tokens = { alice: `ghp_alice_${uid()}`, bob: `ghp_bob_${uid()}` };
const userEnvironment = {
  [`HERMES_USER_TELEGRAM_${alice}_GITHUB_TOKEN`]: tokens.alice,
  [`HERMES_USER_TELEGRAM_${bob}_GITHUB_TOKEN`]: tokens.bob,
  SHARED_NOTICE: 'shared-notice-value',
};

describe('berth exec', () => {
  it('runs in the user sandbox: stdout and stderr apart, the exit status passed on, the user token masked', async () => {
    const run = await berth(
      ['exec', '--platform', 'telegram', '--user', alice, '--', 'echo out; echo err >&2; echo "token=$GITHUB_TOKEN shared=$SHARED_NOTICE"; exit 7'],
      userEnvironment,
    );
    expect(run.stderr).toBe('err\n');
    expect(run.stdout).toBe('out\ntoken=*** shared=***\n');
    expect(run.status).toBe(7);
    expect(existsSync(path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace'))).toBe(true);
  });

  it('gives each user their own token and files', async () => {
    await berth(['exec', '--platform', 'telegram', '--user', alice, '--', 'echo alice-note > /workspace/note.txt'], userEnvironment);
    const run = await berth(
      ['exec', '--platform', 'telegram', '--user', bob, '--', `cat /workspace/note.txt; [ "$GITHUB_TOKEN" = "${tokens.bob}" ] && echo own-token; env`],
      userEnvironment,
    );
    expect(run.stdout).toContain('own-token');
    expect(run.stdout).not.toContain('alice-note');
    expect(run.stdout).not.toContain(tokens.alice);
    expect(run.stderr).toMatch(/No such file/);
  });

  it('uses the task layout without a user, and keeps cd between commands of one session', async () => {
    const run = await berth(['exec', '--task', task, '--cwd', '/tmp', '--', 'pwd; echo "[$GITHUB_TOKEN]"'], userEnvironment);
    expect(run).toMatchObject({ status: 0, stdout: '/tmp\n[]\n' });
    expect(existsSync(path.join(sandboxes, 'docker', task, 'workspace'))).toBe(true);
  });

  it('takes the user from a host session key of either direct shape, as the terminal tool does', async () => {
    const folder = mkdtempSync(path.join(root, 'keys-'));
    const extra = { ...userEnvironment, TERMINAL_SANDBOX_DIR: folder };
    const first = await berth(
      ['exec', '--session-key', `agent:main:telegram:default:direct:${alice}`, '--', 'echo mine > /workspace/key.txt; echo "token=$GITHUB_TOKEN"'],
      extra,
    );
    expect(first).toMatchObject({ status: 0, stdout: 'token=***\n' });
    const second = await berth(
      ['exec', '--session-key', `agent:main:telegram:direct:${bob}`, '--', `cat /workspace/key.txt; [ "$GITHUB_TOKEN" = "${tokens.bob}" ] && echo own-token`],
      extra,
    );
    expect(second.stdout).toBe('own-token\n');
    expect(second.stderr).toMatch(/No such file/);
    expect(
      readdirSync(path.join(folder, 'docker'))
        .filter((name) => !name.startsWith('.'))
        .sort(),
    ).toEqual([`telegram@${alice}`, `telegram@${bob}`].sort());
    const group = await berth(
      ['exec', '--session-key', 'agent:main:telegram:group:-100123', '--', 'cat /workspace/key.txt 2>&1; echo "[$GITHUB_TOKEN]"'],
      extra,
    );
    expect(group.stdout).toMatch(/No such file[\s\S]*\[\]\n$/);
    expect(existsSync(path.join(folder, 'docker', 'task~agent%3Amain%3Atelegram%3Agroup%3A-100123', 'workspace'))).toBe(true);
    for (const args of [
      ['--platform', 'telegram', '--user', alice],
      ['--platform', 'telegram', '--user', bob],
      ['--session-key', 'agent:main:telegram:group:-100123'],
    ]) {
      expectSuccess(await berth(['rm', ...args, '--purge'], extra));
    }
    expect(await containersUnder(folder)).toEqual([]);
  });

  it.each([
    ['per-peer', 'agent:main:direct:789', /per-peer.*session\.dmScope: per-channel-peer/],
    ['main', 'agent:main:main', /session\.dmScope: main.*per-channel-peer/],
    ['upper case', `agent:main:telegram:DIRECT:${alice}`, /not one Berth recognises/],
    ['empty peer', 'agent:main:telegram:direct:', /not one Berth recognises/],
  ])('refuses a %s session key in one line, exit 125, nothing created', async (_label, key, message) => {
    const folder = mkdtempSync(path.join(root, 'keys-'));
    const run = await berth(['exec', '--session-key', key, '--', 'touch /workspace/x'], { TERMINAL_SANDBOX_DIR: folder });
    expect(run.status).toBe(125);
    expect(run.stderr).toMatch(message);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toContain(alice);
    expect(readdirSync(folder)).toEqual([]);
  });

  it('with docker_user_sandbox false runs a named user in the task sandbox, as the terminal tool does, and rm refuses to remove it for them', async () => {
    const folder = mkdtempSync(path.join(root, 'legacy-'));
    const config = writeConfig('legacy.yaml', `terminal:\n  docker_image: ${IMAGE}\n  docker_user_sandbox: false\n`);
    const extra = { ...userEnvironment, TERMINAL_SANDBOX_DIR: folder };
    const run = await berth(['exec', '--config', config, '--platform', 'telegram', '--user', alice, '--', 'echo "[$GITHUB_TOKEN]"; pwd'], extra);
    expect(run).toMatchObject({ status: 0, stdout: '[]\n/workspace\n' });
    expect(readdirSync(path.join(folder, 'docker')).filter((name) => !name.startsWith('.'))).toEqual(['default']);
    const refused = await berth(['rm', '--config', config, '--platform', 'telegram', '--user', alice, '--purge'], extra);
    expect(refused.status).toBe(125);
    expect(refused.stderr).toMatch(/docker_user_sandbox is false, so telegram:\d+ has no sandbox of its own .*nothing was removed/);
    expect(existsSync(path.join(folder, 'docker', 'default', 'workspace'))).toBe(true);
    expectSuccess(await berth(['rm', '--config', config, '--task', 'default', '--purge'], extra));
    expect(await containersUnder(folder)).toEqual([]);
  });

  it('exits 124 after a timeout', async () => {
    const run = await berth(['exec', '--task', task, '--timeout', '1', '--', 'echo started; sleep 30']);
    expect(run.status).toBe(124);
    expect(run.stdout).toContain('started');
  });
});

describe('berth as a command: the shim the set-up installs', () => {
  it("runs this checkout's CLI from inside it and from anywhere else, and passes a command's exit status through, 127 included", async () => {
    const repository = path.resolve(path.dirname(CLI), '..', '..', '..');
    const shim = path.join(mkdtempSync(path.join(root, 'shim-')), 'berth');
    // The set-up's own function, writing to a path of the test's instead of /usr/local/bin.
    const script = `source scripts/lib.sh >/dev/null 2>&1; BERTH_SHIM=${JSON.stringify(shim)}; BERTH_ORIGINAL_PATH=/usr/bin:/bin; install_berth_command`;
    await new Promise<void>((resolve, reject) => execFile('bash', ['-c', script], { cwd: repository }, (error) => (error ? reject(error) : resolve())));
    const task = `shim-${uid()}`;
    for (const cwd of [path.join(repository, 'docs'), root]) {
      const run = await new Promise<{ status: number; stderr: string }>((resolve) =>
        execFile(
          shim,
          ['exec', '--task', task, '--', 'nosuchcommand'],
          { cwd, env: { PATH: process.env.PATH ?? '', HOME: root, HERMES_HOME: home, TERMINAL_SANDBOX_DIR: sandboxes } },
          (error, _stdout, stderr) => resolve({ status: error ? Number(error.code) : 0, stderr }),
        ),
      );
      expect(run.status, `${cwd}: ${run.stderr}`).toBe(127);
      expect(run.stderr).toMatch(/nosuchcommand/);
    }
    expectSuccess(await berth(['rm', '--task', task, '--purge']));
  });
});

describe('berth ls, env, doctor', () => {
  it('ls --json lists the sandboxes with every field', async () => {
    const before = Date.now();
    await berth(['exec', '--platform', 'telegram', '--user', alice, '--', 'true'], userEnvironment);
    const run = await berth(['ls', '--json']);
    expect(run.status).toBe(0);
    const records = JSON.parse(run.stdout) as Array<Record<string, unknown>>;
    const mine = records.find((record) => record.scope === `user:telegram:${alice}`);
    expect(mine).toEqual({
      scope: `user:telegram:${alice}`,
      kind: 'user',
      platform: 'telegram',
      user: alice,
      task: null,
      profile: null,
      containerId: expect.stringMatching(/^[0-9a-f]{12,64}$/),
      state: 'running',
      workspace: path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace'),
      home: path.join(sandboxes, 'docker', `telegram@${alice}`, 'home'),
      // Recorded by the exec in another process, read back by this one.
      lastUsed: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      // The user's own disk: container_disk (the default, 51200 MB) and what is on it.
      disk: { usedMb: expect.any(Number), limitMb: 51_200 },
    });
    expect(Date.parse(String(mine?.lastUsed))).toBeGreaterThanOrEqual(before - 1000);
    // The same person in a host profile: a container and folders of its own, named with the profile.
    await berth(['exec', '--profile', 'work', '--platform', 'telegram', '--user', alice, '--', 'true'], userEnvironment);
    const both = JSON.parse((await berth(['ls', '--json'])).stdout) as Array<Record<string, unknown>>;
    const inWork = both.find((record) => record.scope === `profile:work:user:telegram:${alice}`);
    expect(inWork).toMatchObject({ kind: 'user', platform: 'telegram', user: alice, profile: 'work', state: 'running' });
    expect(inWork?.containerId).not.toBe(mine?.containerId);
    expect(inWork?.workspace).toBe(path.join(sandboxes, 'docker', `profile~work~telegram@${alice}`, 'workspace'));
    const human = await berth(['ls']);
    expect(human.stdout).toContain(`work/telegram:${alice}`);
    expect(human.stdout.split('\n')[0]).toMatch(/^OWNER\s+CONTAINER\s+STATE\s+LAST USED\s+DISK\s+WORKSPACE\s+HOME$/);
    expect(human.stdout).toMatch(new RegExp(`telegram:${alice}.*\\d+/51200 MB`));
    expect(human.stdout).toContain(`telegram:${alice}`);
    // Its last line: how many may run and why (root, a local engine with cgroupfs: the shared bound holds).
    expect(human.stdout).toMatch(
      /\n\d+ running; any number of sandboxes may run at once within their shared bound \(\d+ MB, \d+ pids\).*\(docker_max_running: auto\)\n$/,
    );
    // biome-ignore lint/suspicious/noControlCharactersInRegex: no terminal colour code (ESC [) in output that is not a terminal
    expect(human.stdout).not.toMatch(/\u001b\[/);
  });

  it("ls and rm see only this installation's sandboxes, though another gateway serves the same user on the engine", async () => {
    const other = { TERMINAL_SANDBOX_DIR: path.join(root, 'other-sandboxes') };
    expectSuccess(await berth(['exec', '--platform', 'telegram', '--user', alice, '--', 'echo other > /workspace/who'], other));
    expectSuccess(await berth(['exec', '--platform', 'telegram', '--user', alice, '--', 'true']));
    const listed = async (environment: Record<string, string> = {}) =>
      (JSON.parse((await berth(['ls', '--json'], environment)).stdout) as Array<{ scope: string; workspace: string }>)
        .filter((record) => record.scope === `user:telegram:${alice}`)
        .map((record) => record.workspace);
    expect(await listed()).toEqual([path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace')]);
    expect(await listed(other)).toEqual([path.join(other.TERMINAL_SANDBOX_DIR, 'docker', `telegram@${alice}`, 'workspace')]);
    // Removing the other installation's sandbox of alice leaves this one's running.
    expectSuccess(await berth(['rm', '--platform', 'telegram', '--user', alice, '--purge'], other));
    expect(await listed(other)).toEqual([]);
    expect(await listed()).toEqual([path.join(sandboxes, 'docker', `telegram@${alice}`, 'workspace')]);
    expect((await berth(['exec', '--platform', 'telegram', '--user', alice, '--', 'test ! -e /workspace/who && echo kept'])).stdout).toBe('kept\n');
  });

  it('env --json gives sources, masked values, the exact prefix and refused names', async () => {
    const run = await berth(['env', '--platform', 'telegram', '--user', alice, '--json'], {
      ...userEnvironment,
      HERMES_USER_TELEGRAM_0042_GITHUB_TOKEN: 'refused-secret-value',
    });
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      identity: `telegram:${alice}`,
      scope: `user:telegram:${alice}`,
      prefix: `HERMES_USER_TELEGRAM_${alice}_`,
      linked: [`telegram:${alice}`],
      variables: [
        { name: 'GITHUB_TOKEN', source: 'user', from: `HERMES_USER_TELEGRAM_${alice}_GITHUB_TOKEN`, value: '***' },
        { name: 'SHARED_NOTICE', source: 'forwarded', from: 'SHARED_NOTICE', value: '***' },
      ],
      refused: [{ variable: 'HERMES_USER_TELEGRAM_0042_GITHUB_TOKEN', reason: expect.any(String) }],
      misnamed: [],
    });
    expect(run.stdout).not.toContain(tokens.alice);
    expect(run.stdout).not.toContain('refused-secret-value');
    const human = await berth(['env', '--platform', 'tg', '--user', alice], userEnvironment);
    expect(human.stdout).toContain(`prefix for this user's variables: HERMES_USER_TELEGRAM_${alice}_`);
  });

  it('doctor exits 0 when all is well, and says what to do otherwise', async () => {
    const good = await berth(['doctor', '--json']);
    const report = JSON.parse(good.stdout) as {
      ok: boolean;
      engine: Record<string, unknown>;
      config: Record<string, unknown>;
      image: Record<string, unknown>;
      sandboxRoot: Record<string, unknown>;
    };
    expect(good.status, good.stdout).toBe(0);
    expect(report).toMatchObject({
      ok: true,
      engine: { name: 'docker', reachable: true, apiVersion: expect.any(String), how: expect.any(String) },
      config: { file: path.join(home, 'config.yaml'), valid: true },
      image: { name: IMAGE, present: true },
      sandboxRoot: { path: sandboxes, writable: true },
    });
    const config = writeConfig('doctor-missing.yaml', 'terminal:\n  docker_image: localhost/berth-no-such-image:0\n');
    const bad = await berth(['doctor', '--config', config]);
    expect(bad.status).toBe(1);
    expect(bad.stdout).toMatch(/PROBLEM {2}image: localhost\/berth-no-such-image:0 is not on the engine/);
    expect(bad.stdout).toMatch(/-> pull it/);
    const broken = await berth(['doctor', '--json'], { DOCKER_HOST: `unix://${root}/none.sock` });
    expect(broken.status).toBe(1);
    expect(JSON.parse(broken.stdout).checks).toContainEqual(
      expect.objectContaining({ name: 'engine', status: 'problem', fix: expect.stringMatching(/start the docker engine/) }),
    );
  });

  it('has --help on every command', async () => {
    for (const command of ['exec', 'ls', 'rm', 'env', 'doctor', 'demo']) {
      const run = await berth([command, '--help']);
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: berth ${command}`));
    }
  });
});

describe('berth rm', () => {
  it('--purge removes the workspace and home, not what symlinks inside point to', async () => {
    const victim = uid();
    const attacker = uid();
    const hostFolder = path.join(root, 'host-folder');
    mkdirSync(hostFolder, { recursive: true });
    writeFileSync(path.join(hostFolder, 'keep.txt'), 'host file');
    await berth(['exec', '--platform', 'telegram', '--user', victim, '--', 'echo victim-data > /workspace/data.txt; echo rc > /root/.profile-data']);
    const victimWorkspace = path.join(sandboxes, 'docker', `telegram@${victim}`, 'workspace');
    const attackerFolder = path.join(sandboxes, 'docker', `telegram@${attacker}`);
    const plant = await berth([
      'exec',
      '--platform',
      'telegram',
      '--user',
      attacker,
      '--',
      `ln -s ${victimWorkspace} /workspace/victim-link; ln -s ${hostFolder} /workspace/host-link; ` +
        `ln -s ${victimWorkspace}/data.txt /root/victim-file; mkdir -p /workspace/deep && ln -s ${hostFolder} /workspace/deep/host && echo planted`,
    ]);
    expect(plant.stdout).toBe('planted\n');
    const removal = await berth(['rm', '--platform', 'telegram', '--user', attacker, '--purge']);
    expect(removal.status, removal.stderr).toBe(0);
    expect(existsSync(path.join(attackerFolder, 'workspace'))).toBe(false);
    expect(existsSync(path.join(attackerFolder, 'home'))).toBe(false);
    expect(readFileSync(path.join(victimWorkspace, 'data.txt'), 'utf8')).toBe('victim-data\n');
    expect(readFileSync(path.join(hostFolder, 'keep.txt'), 'utf8')).toBe('host file');
    const list = JSON.parse((await berth(['ls', '--json'])).stdout) as Array<{ scope: string }>;
    expect(list.map((record) => record.scope)).not.toContain(`user:telegram:${attacker}`);
    expect(list.map((record) => record.scope)).toContain(`user:telegram:${victim}`);
    expectSuccess(await berth(['rm', '--platform', 'telegram', '--user', victim, '--purge']));
  });

  it('without --purge keeps the files', async () => {
    const user = uid();
    await berth(['exec', '--platform', 'telegram', '--user', user, '--', 'echo kept > /workspace/kept.txt']);
    const run = await berth(['rm', '--platform', 'telegram', '--user', user]);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^removed user:telegram:\d+: its container \(files kept in /);
    expect(readFileSync(path.join(sandboxes, 'docker', `telegram@${user}`, 'workspace', 'kept.txt'), 'utf8')).toBe('kept\n');
    expect(await containersUnder(path.join(sandboxes, 'docker', `telegram@${user}`))).toEqual([]);
    // Again: nothing is left to remove without --purge, and it says so; --purge then takes the files.
    const again = await berth(['rm', '--platform', 'telegram', '--user', user]);
    expect(again.stdout).toMatch(/^nothing removed: user:telegram:\d+ has no container \(its files in .* are kept; add --purge to remove them\)\n$/);
    expect((await berth(['rm', '--platform', 'telegram', '--user', user, '--purge'])).stdout).toMatch(/^removed user:telegram:\d+: no container, /);
  });

  it('says nothing was removed when there was nothing: a user never seen, a task that never ran', async () => {
    for (const args of [
      ['--platform', 'telegram', '--user', uid()],
      ['--platform', 'telegram', '--user', uid(), '--purge'],
      ['--task', 'nosuch', '--purge'],
    ]) {
      const run = await berth(['rm', ...args]);
      expect(run.status, args.join(' ')).toBe(0);
      expect(run.stdout, args.join(' ')).toMatch(/^nothing removed: (user:telegram:\d+|task:nosuch) has no container and no files under /);
    }
  });

  it('removes the sandboxes the other tests made', async () => {
    for (const args of [
      ['--platform', 'telegram', '--user', alice],
      ['--platform', 'telegram', '--user', bob],
      ['--profile', 'work', '--platform', 'telegram', '--user', alice],
      ['--task', task],
    ]) {
      expectSuccess(await berth(['rm', ...args, '--purge']));
    }
    expect(await containersUnder(sandboxes)).toEqual([]);
  });
});
