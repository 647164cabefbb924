import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, realpath, rm } from 'node:fs/promises';
import { createRedactor, type SandboxBackend, type SandboxInfo, type SandboxScope, type TerminalConfig } from '@berth/core';

/**
 * Flaws that can be switched on, each one a mistake a real backend could make. Two more are
 * always there: the timeout kills only the command's own shell, and output is cut before it is
 * masked.
 */
export type BackendFlaw = 'capabilities' | 'env-in-config' | 'shared-network' | 'no-mask' | 'naive-purge' | 'readable-names' | 'no-default-timeout';

/** Runs the docker CLI; never throws, returns the exit code and both streams. */
export function runDocker(
  args: string[],
  stdin?: string | Uint8Array,
  timeoutMs = 120_000,
): Promise<{ code: number; out: Buffer; err: Buffer; killed: boolean }> {
  return new Promise((resolve) => {
    const child = spawn('docker', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.stderr.on('data', (chunk) => err.push(chunk));
    child.stdin.on('error', () => {});
    child.stdin.end(stdin ?? '');
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, out: Buffer.concat(out), err: Buffer.concat(err), killed });
    });
  });
}

/**
 * A deliberately simple Docker backend over the docker CLI (one `docker exec` per command), used
 * only to show that testBackend fails backends with known flaws. Not for use anywhere else.
 */
export function createFlawedDockerBackend(config: TerminalConfig, flaws: ReadonlySet<BackendFlaw>, network: string): SandboxBackend {
  const locks = new Map<string, Promise<string>>();
  const lastUsed = new Map<string, number>();
  // The readable slug names the platform and the id; without the flaw, a digest of the scope key.
  const containerNameOf = (scope: SandboxScope) =>
    `berth-testkit-flawed-${flaws.has('readable-names') ? scope.slug : createHash('sha256').update(scope.key).digest('hex').slice(0, 16)}`;
  const limit = config.docker_output_limit;
  const cap = (buffer: Buffer) => {
    if (buffer.length <= limit) return { text: buffer.toString('utf8'), cut: false };
    const half = Math.floor(limit / 2) - 100;
    return {
      text:
        `${buffer.subarray(0, half).toString('utf8')}\n[... ${buffer.length - 2 * half} ` +
        `bytes cut ...]\n${buffer.subarray(buffer.length - half).toString('utf8')}`,
      cut: true,
    };
  };
  const acquire = (request: Parameters<SandboxBackend['doExec']>[0]): Promise<string> => {
    const key = request.scope.key;
    const previous = locks.get(key) ?? Promise.resolve('');
    const next = previous
      .catch(() => '')
      .then(async () => {
        const name = containerNameOf(request.scope);
        const found = await runDocker(['inspect', '-f', '{{.Id}} {{.State.Running}}', name]);
        if (found.code === 0) {
          const [id, running] = found.out.toString().trim().split(' ');
          if (running !== 'true') await runDocker(['start', name]);
          return id!;
        }
        await mkdir(request.paths.workspace, { recursive: true, mode: 0o700 });
        await mkdir(request.paths.home, { recursive: true, mode: 0o700 });
        if (config.docker_network)
          await runDocker(['network', 'create', '-o', 'com.docker.network.bridge.enable_icc=false', '--label', 'berth.testkit.flawed=1', network]);
        const run = await runDocker([
          'run',
          '-d',
          '--name',
          name,
          ...(flaws.has('readable-names') ? [] : ['--hostname', 'sandbox']),
          '--label',
          'berth.testkit.flawed=1',
          '--label',
          `berth.testkit.flawed.scope=${key}`,
          '--label',
          `berth.testkit.flawed.workspace=${request.paths.workspace}`,
          '--label',
          `berth.testkit.flawed.home=${request.paths.home}`,
          ...(flaws.has('capabilities')
            ? []
            : ['--cap-drop', 'ALL', ...config.docker_cap_add.flatMap((c) => ['--cap-add', c]), '--security-opt', 'no-new-privileges']),
          ...(flaws.has('env-in-config') ? Object.entries(request.environment.variables).flatMap(([k, v]) => ['-e', `${k}=${v}`]) : []),
          '--pids-limit',
          String(config.docker_pids_limit),
          '--init',
          '--network',
          config.docker_network ? (flaws.has('shared-network') ? 'bridge' : network) : 'none',
          '-v',
          `${request.paths.workspace}:/workspace`,
          '-v',
          `${request.paths.home}:/root`,
          '-w',
          '/workspace',
          config.docker_image,
          'sleep',
          'infinity',
        ]);
        if (run.code !== 0) throw new Error(run.err.toString());
        return run.out.toString().trim();
      });
    locks.set(key, next);
    return next;
  };
  const stopScope = async (key: string): Promise<void> => {
    for (const entry of await backend.list()) if (entry.scopeKey === key) await runDocker(['stop', '-t', '0', entry.containerId]);
  };
  // Idle sandboxes are stopped by the backend itself, as the contract says.
  const reaper =
    config.lifetime_seconds > 0
      ? setInterval(() => {
          for (const [key, at] of lastUsed) {
            if (Date.now() - at > config.lifetime_seconds * 1000) {
              lastUsed.delete(key);
              void stopScope(key);
            }
          }
        }, 500)
      : undefined;
  reaper?.unref();
  const backend: SandboxBackend = {
    specificationVersion: 'v1',
    name: 'flawed',
    capabilities: { persistentSession: false, networkIsolation: true, idleStop: true, adoption: true },
    async doExec(request, exec) {
      const started = Date.now();
      await acquire(request);
      lastUsed.set(request.scope.key, Date.now());
      const env = Object.entries(request.environment.variables).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
      // The flaw: a command that gives no timeout runs as long as it likes, whatever terminal.timeout says.
      const seconds = exec.timeout ?? (flaws.has('no-default-timeout') ? 86_400 : config.timeout);
      const script = `exec timeout -s KILL ${seconds} sh -c "$1"`;
      const result = await runDocker(
        ['exec', '-i', ...(exec.cwd ? ['-w', exec.cwd] : []), ...env, containerNameOf(request.scope), 'sh', '-c', script, 'x', exec.command],
        exec.stdin ?? '',
      );
      const timedOut = result.code === 137 && Date.now() - started >= seconds * 1000;
      const redactor = createRedactor(config.docker_mask_secrets && !flaws.has('no-mask') ? request.environment.secrets : []);
      const out = cap(result.out);
      const err = cap(result.err);
      return {
        exitCode: timedOut ? 124 : result.code,
        stdout: redactor.redact(out.text),
        stderr: redactor.redact(err.text),
        timedOut,
        truncated: out.cut || err.cut,
        durationMs: Date.now() - started,
      };
    },
    async list() {
      const listed = await runDocker([
        'ps',
        '-a',
        '--filter',
        'label=berth.testkit.flawed=1',
        '--format',
        '{{.ID}}\t{{.Names}}\t{{.State}}\t{{.Label "berth.testkit.flawed.scope"}}',
      ]);
      return listed.out
        .toString()
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line): SandboxInfo => {
          const [id, name, state, key] = line.split('\t');
          return {
            scopeKey: key!,
            kind: key!.startsWith('user:') ? 'user' : 'task',
            containerId: id!,
            containerName: name!,
            state: state === 'running' ? 'running' : state === 'exited' ? 'stopped' : 'other',
            workspace: '',
            home: '',
          };
        });
    },
    async remove(key, options) {
      for (const entry of await backend.list()) if (entry.scopeKey === key) await runDocker(['rm', '-f', entry.containerId]);
      locks.delete(key);
      if (options?.purge && options.paths) {
        if (flaws.has('naive-purge'))
          for (const n of ['link-to-folder', 'link-to-file']) {
            const t = await realpath(`${options.paths.workspace}/${n}`).catch(() => undefined);
            if (t) await rm(t, { recursive: true, force: true });
          }
        await rm(options.paths.workspace, { recursive: true, force: true });
        await rm(options.paths.home, { recursive: true, force: true });
      }
    },
    async describe() {
      const version = await runDocker(['version', '--format', '{{.Server.Version}} {{.Server.APIVersion}}']);
      const [server, api] = version.out.toString().trim().split(' ');
      return { engine: 'docker', endpoint: 'the docker CLI', discovery: 'the docker CLI', version: server ?? '', apiVersion: api ?? '', warnings: [] };
    },
    async close() {
      clearInterval(reaper);
    },
  };
  return backend;
}
