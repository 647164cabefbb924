import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whileSaturating } from '@berth/testkit';
import type { DockerBackend } from './create-docker-backend.js';
import { createHarness, engineExec, type Harness } from './testing/integration-harness.js';

let harness: Harness;
let backend: DockerBackend;

const SECRET = 'ghp_s3cr3t-value-for-alice-0123456789';
const BOB_SECRET = 'ghp_bob-only-token-9876543210';
const environment = {
  HERMES_USER_TELEGRAM_1001_GITHUB_TOKEN: SECRET,
  HERMES_USER_TELEGRAM_1002_GITHUB_TOKEN: BOB_SECRET,
  HERMES_USER_TELEGRAM_1001_MULTILINE: "line one\nit's 'quoted' $HOME `x` \\ done",
};
const alice = () => harness.request({ platform: 'telegram', userId: '1001' }, environment);
const bob = () => harness.request({ platform: 'telegram', userId: '1002' }, environment);

beforeAll(async () => {
  harness = await createHarness();
  backend = harness.backend({ docker_output_limit: 4096, timeout: 30 });
});

afterAll(async () => {
  await harness?.cleanup();
});

describe('exec through the persistent shell', () => {
  it('keeps exit code, stdout and stderr of each command apart', async () => {
    const result = await backend.doExec(alice(), { command: 'echo out; echo err >&2; exit 7' });
    expect(result).toMatchObject({ exitCode: 7, stdout: 'out\n', stderr: 'err\n', timedOut: false, truncated: false });
    expect(await backend.doExec(alice(), { command: 'printf "no newline"' })).toMatchObject({ exitCode: 0, stdout: 'no newline', stderr: '' });
  });

  it('reads stdin from /dev/null, or exactly the given input (binary safe), never the control stream', async () => {
    expect(await backend.doExec(alice(), { command: 'cat; echo "[eof]"' })).toMatchObject({ stdout: '[eof]\n' });
    const input = "quote ' dollar $HOME percent %d back \\ nul\u0000 digits 123\nünïcödé ✓\n";
    const result = await backend.doExec(alice(), { command: 'cat', stdin: input });
    expect(result.stdout).toBe(input);
    const bytes = Uint8Array.from({ length: 256 }, (_, index) => index);
    const counted = await backend.doExec(alice(), { command: 'wc -c; ', stdin: bytes });
    expect(counted.stdout.trim()).toBe('256');
    // A command that tries to read more than its input sees end of file, not Berth's next frame.
    const greedy = await backend.doExec(alice(), { command: 'cat > /dev/null; read -r line || echo "nothing more"' });
    expect(greedy.stdout).toBe('nothing more\n');
  });

  it('keeps cd and export between commands, and runs a given cwd for that command', async () => {
    await backend.doExec(alice(), { command: 'mkdir -p /workspace/project && cd /workspace/project && export GREETING="hello there"' });
    expect((await backend.doExec(alice(), { command: 'pwd; echo "$GREETING"' })).stdout).toBe('/workspace/project\nhello there\n');
    expect((await backend.doExec(alice(), { command: 'pwd', cwd: '/tmp' })).stdout).toBe('/tmp\n');
    expect((await backend.doExec(alice(), { command: 'exit 3' })).exitCode).toBe(3);
    expect((await backend.doExec(alice(), { command: 'cd /workspace && pwd' })).stdout).toBe('/workspace\n');
    expect((await backend.doExec(alice(), { command: 'unset GREETING' })).exitCode).toBe(0);
    expect((await backend.doExec(alice(), { command: 'echo "[${GREETING-unset}]"' })).stdout).toBe('[unset]\n');
  });

  it('applies a changed environment to a live session', async () => {
    const before = await backend.doExec(alice(), { command: 'echo "$ROTATING"' });
    expect(before.stdout).toBe('\n');
    const rotated = harness.request({ platform: 'telegram', userId: '1001' }, { ...environment, HERMES_USER_TELEGRAM_1001_ROTATING: 'rotated-value-1' });
    expect((await backend.doExec(rotated, { command: 'echo "$ROTATING"' })).stdout).toBe('***\n');
    const unmasked = harness.backend({ docker_mask_secrets: false });
    expect((await unmasked.doExec(rotated, { command: 'echo "$ROTATING"' })).stdout).toBe('rotated-value-1\n');
    await unmasked.close();
  });

  it('passes unicode through and reports a syntax error like sh does', async () => {
    expect((await backend.doExec(alice(), { command: 'echo "héllo 世界 🚀"' })).stdout).toBe('héllo 世界 🚀\n');
    const broken = await backend.doExec(alice(), { command: 'if then fi (' });
    expect(broken.exitCode).not.toBe(0);
    expect(broken.stderr).toMatch(/syntax|unexpected/i);
    expect((await backend.doExec(alice(), { command: 'echo still-fine' })).stdout).toBe('still-fine\n');
  });

  it('caps large output per stream, keeping head and tail and saying so', async () => {
    const result = await backend.doExec(alice(), { command: 'echo BEGIN; yes line | head -c 200000; echo; echo END' });
    expect(result.truncated).toBe(true);
    expect(result.stdout.startsWith('BEGIN\n')).toBe(true);
    expect(result.stdout.endsWith('END\n')).toBe(true);
    expect(result.stdout).toMatch(/bytes cut here; output is limited to 4096 bytes/);
    expect(result.stdout.length).toBeLessThan(4096 + 200);
  });

  it('kills the whole process tree at the timeout (exit 124) and the session stays usable', async () => {
    const marker = `sleep 61${Math.floor(Math.random() * 9)}`;
    const started = Date.now();
    const result = await backend.doExec(alice(), { command: `sh -c 'sh -c "${marker}" & wait'; echo never`, timeout: 1 });
    expect(result).toMatchObject({ exitCode: 124, timedOut: true });
    expect(result.stdout).not.toContain('never');
    expect(Date.now() - started).toBeLessThan(10_000);
    const containerId = await backend.doAcquire(alice());
    const ps = await engineExec(harness.docker, containerId, 'ps -o pid,args');
    expect(ps.output).not.toContain(marker);
    expect((await backend.doExec(alice(), { command: 'echo alive' })).stdout).toBe('alive\n');
  });

  it('runs concurrent commands of one user one at a time, outputs never mixed', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        backend.doExec(alice(), { command: `for i in 1 2 3; do echo c${index}-$i; sleep 0.01; done; echo e${index} >&2` }),
      ),
    );
    results.forEach((result, index) => {
      expect(result.stdout).toBe(`c${index}-1\nc${index}-2\nc${index}-3\n`);
      expect(result.stderr).toBe(`e${index}\n`);
    });
  });
});

describe('isolation and secrets', () => {
  it('gives two users their own files and variables', async () => {
    await backend.doExec(alice(), { command: 'echo alice-data > /workspace/mine.txt && echo alice-home > /root/.note' });
    const bobView = await backend.doExec(bob(), { command: 'cat /workspace/mine.txt /root/.note 2>&1; echo "token=$GITHUB_TOKEN"; echo "multi=$MULTILINE"' });
    expect(bobView.stdout).toContain('No such file');
    expect(bobView.stdout).not.toContain('alice-data');
    expect(bobView.stdout).toContain('token=***');
    expect(bobView.stdout).toContain('multi=\n');
    // Masking off shows which token bob's commands really see.
    const unmasked = harness.backend({ docker_mask_secrets: false });
    const raw = await unmasked.doExec(bob(), { command: 'echo "$GITHUB_TOKEN"' });
    expect(raw.stdout).toBe(`${BOB_SECRET}\n`);
    const aliceRaw = await unmasked.doExec(alice(), { command: 'printf "%s" "$MULTILINE"' });
    expect(aliceRaw.stdout).toBe(environment.HERMES_USER_TELEGRAM_1001_MULTILINE);
    await unmasked.close();
  });

  it('masks secret values in output by default', async () => {
    const result = await backend.doExec(alice(), { command: 'echo "token is $GITHUB_TOKEN"; echo "$GITHUB_TOKEN" >&2' });
    expect(result.stdout).toBe('token is ***\n');
    expect(result.stderr).toBe('***\n');
  });

  it('stores no variable value in the container or exec configuration, or in labels', async () => {
    const containerId = await backend.doAcquire(alice());
    const info = await harness.docker.getContainer(containerId).inspect();
    const stored = JSON.stringify({ config: info.Config, hostConfig: info.HostConfig, labels: info.Config.Labels });
    expect(stored).not.toContain(SECRET);
    expect(stored).not.toContain('GITHUB_TOKEN');
    expect(info.Config.Env?.some((entry) => entry.startsWith('GITHUB_TOKEN'))).toBe(false);
    for (const execId of info.ExecIDs ?? []) {
      const exec = await harness.docker.getExec(execId).inspect();
      expect(JSON.stringify(exec)).not.toContain(SECRET);
    }
    // ...while the commands do see it.
    const check = await backend.doExec(alice(), { command: `[ "$GITHUB_TOKEN" = "${SECRET}" ] && echo same` });
    expect(check.stdout).toBe('same\n');
  });
});

describe('hardening, seen from inside', () => {
  it('drops capabilities to the configured few and sets no-new-privileges', async () => {
    const status = (await backend.doExec(alice(), { command: 'cat /proc/self/status' })).stdout;
    const capEff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(status)![1]}`);
    // CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7.
    expect(capEff).toBe(0b11111011n);
    expect(status).toMatch(/NoNewPrivs:\s*1/);
    const mount = await backend.doExec(alice(), { command: 'mount -t tmpfs none /mnt 2>&1; echo rc=$?' });
    expect(mount.stdout).toMatch(/rc=[1-9]/);
    const socket = await backend.doExec(alice(), { command: 'ls /var/run/docker.sock /run/docker.sock 2>&1 | grep -c "No such file"' });
    expect(socket.stdout.trim()).toBe('2');
  });

  // Saturates the machine on purpose: under the machine-wide lock, which another suite's bomb may
  // hold first (the budget covers that wait).
  it('holds the pids limit against a fork bomb while another user keeps answering', { timeout: 300_000 }, () =>
    whileSaturating(async () => {
      const limited = harness.backend({ docker_pids_limit: 64, timeout: 30 });
      const bomber = harness.request({ platform: 'telegram', userId: '666' });
      await limited.doExec(bomber, { command: 'true' });
      const containerId = await limited.doAcquire(bomber);
      const bomb = limited.doExec(bomber, { command: '(while :; do sleep 1000 & done) 2>/dev/null; while :; do :; done', timeout: 10 });
      // The bomb fills its pids limit (however long a busy machine takes), and goes no further.
      const pids = async () =>
        ((await harness.docker.getContainer(containerId).stats({ stream: false })) as { pids_stats?: { current?: number } }).pids_stats?.current ?? 0;
      let current = await pids();
      for (let attempt = 0; attempt < 50 && current <= 32; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        current = await pids();
      }
      expect(current).toBeGreaterThan(32);
      expect(current).toBeLessThanOrEqual(64);
      const answers = await Promise.all([1, 2, 3].map(() => backend.doExec(bob(), { command: 'echo pong' })));
      expect(answers.map((answer) => answer.stdout)).toEqual(['pong\n', 'pong\n', 'pong\n']);
      const result = await bomb;
      expect(result).toMatchObject({ exitCode: 124, timedOut: true });
      // After the kill the bomber's own sandbox answers again.
      // The killed processes are orphans that init reaps a moment later: poll, within a bound.
      let processes = Number.POSITIVE_INFINITY;
      for (let attempt = 0; attempt < 150 && processes >= 15; attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 200));
        const after = await limited.doExec(bomber, { command: 'echo recovered; ps -o pid | wc -l' });
        expect(after.stdout).toMatch(/^recovered\n\s*\d+\n$/);
        processes = Number(after.stdout.split('\n')[1]);
      }
      expect(processes).toBeLessThan(15);
      await limited.close();
    }),
  );
});

describe('fallback mode: one engine exec per command', () => {
  it('keeps the exec semantics, persistence, secrecy and timeouts', async () => {
    const fallback = harness.backend({ docker_exec_mode: 'exec', docker_mask_secrets: false });
    const carol = harness.request({ platform: 'telegram', userId: '1003' }, { HERMES_USER_TELEGRAM_1003_GITHUB_TOKEN: 'carol-token-123456' });
    expect(fallback.capabilities.persistentSession).toBe(false);
    expect(await fallback.doExec(carol, { command: 'echo out; echo err >&2; exit 5' })).toMatchObject({ exitCode: 5, stdout: 'out\n', stderr: 'err\n' });
    expect((await fallback.doExec(carol, { command: 'cat', stdin: 'given\u0000input' })).stdout).toBe('given\u0000input');
    expect((await fallback.doExec(carol, { command: 'cat; echo "[eof]"' })).stdout).toBe('[eof]\n');
    expect((await fallback.doExec(carol, { command: 'echo "$GITHUB_TOKEN"' })).stdout).toBe('carol-token-123456\n');
    await fallback.doExec(carol, { command: 'cd /tmp; export FALLBACK=yes' });
    expect((await fallback.doExec(carol, { command: 'pwd; echo $FALLBACK' })).stdout).toBe('/tmp\nyes\n');
    const timed = await fallback.doExec(carol, { command: 'sh -c "sleep 47" & wait', timeout: 1 });
    expect(timed).toMatchObject({ exitCode: 124, timedOut: true });
    const containerId = await fallback.doAcquire(carol);
    expect((await engineExec(harness.docker, containerId, 'ps -o args')).output).not.toContain('sleep 47');
    const info = await harness.docker.getContainer(containerId).inspect();
    for (const execId of info.ExecIDs ?? []) expect(JSON.stringify(await harness.docker.getExec(execId).inspect())).not.toContain('carol-token-123456');
    await fallback.close();
  });
});

describe("a sandbox's shells", () => {
  it('start through its launcher, with no engine exec at all, a timeout kill and a new session included', async () => {
    const backend = harness.backend({ timeout: 30 });
    const request = harness.request({ platform: 'telegram', userId: '1090' });
    expect(await backend.doExec(request, { command: 'echo first' })).toMatchObject({ exitCode: 0, stdout: 'first\n' });
    expect(await backend.doExec(request, { command: 'sleep 30', timeout: 1 })).toMatchObject({ exitCode: 124, timedOut: true });
    // A job left holding the output retires the session; the next command gets a new one.
    const left = await backend.doExec(request, { command: 'sleep 30 &' });
    expect(left.exitCode).toBe(0);
    expect((await backend.doExec(request, { command: 'echo again' })).stdout).toBe('again\n');
    const id = await backend.doAcquire(request);
    const info = await harness.docker.getContainer(id).inspect();
    expect(info.ExecIDs ?? []).toEqual([]);
    expect(info.Mounts.find((mount) => mount.Destination === '/run/berth')).toMatchObject({ RW: false, Source: `${request.paths.folder}/.berth-channels` });
    // The launch FIFO, and the FIFOs of the two live shells (the session and the kill shell); the
    // retired session's are gone.
    const names = (await engineExec(harness.docker, id, 'ls /run/berth')).output.trim().split('\n');
    expect(
      names
        .filter((name) => name !== 'launch')
        .map((name) => name.replace(/^[0-9a-f]{16}/, ''))
        .sort(),
    ).toEqual(['.err', '.err', '.in', '.in', '.out', '.out']);
  });

  it('are engine execs once the launcher is gone (killed), and answer all the same', async () => {
    const backend = harness.backend({ timeout: 30 });
    const request = harness.request({ platform: 'telegram', userId: '1091' });
    const id = await backend.doAcquire(request);
    // The launcher: the child of the main process (not of the engine's init) that runs the same script.
    const killed = await engineExec(
      harness.docker,
      id,
      `for d in /proc/[0-9]*; do case "$(tr '\\0' ' ' 2>/dev/null < $d/cmdline)" in '/bin/sh -c trap'*) read -r p c s pp rest < $d/stat; ` +
        `case "$(tr '\\0' ' ' 2>/dev/null < /proc/$pp/cmdline)" in '/bin/sh -c trap'*) kill -9 \${d#/proc/} && echo killed ;; esac ;; esac; done`,
    );
    expect(killed.output).toBe('killed\n');
    // A job left holding the output retires the session: the next command needs a new shell.
    await backend.doExec(request, { command: 'sleep 30 &' });
    const result = await backend.doExec(request, { command: 'echo still here; echo $PWD' });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'still here\n/workspace\n' });
    const info = await harness.docker.getContainer(id).inspect();
    // The new session is an exec (the kill shell, still alive, came from the launcher before).
    expect((info.ExecIDs ?? []).length).toBe(1);
    expect((await backend.doExec(request, { command: 'sleep 30', timeout: 1 })).exitCode).toBe(124);
  });
});
