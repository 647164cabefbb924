import { spawn, type ChildProcess } from 'node:child_process';
import { EngineUnavailableError, SandboxError } from '@berth/core';
import type { DriverSandbox, ExecChannel, SandboxDriverV1, SandboxSpec } from '@berth/core/driver';
import { WORKSPACE_TARGET } from '../sandbox-spec.js';

/** One sandbox of the fake engine. */
export interface FakeSandbox {
  readonly id: string;
  name: string;
  state: DriverSandbox['state'];
  readonly labels: Record<string, string>;
  readonly spec: SandboxSpec;
  /** The shells running "inside" it (host processes); they die when it stops. */
  readonly processes: Set<ChildProcess>;
}

/** The command line of the user's work in a sandbox of {@link FakeDriver.busy}, as `listProcesses` lists it. */
export const FAKE_WORK = 'node server.js';

/** A driver over an in-memory engine whose execs are real host shells: the policies' test bench. */
export interface FakeDriver extends SandboxDriverV1 {
  readonly sandboxes: Map<string, FakeSandbox>;
  /** Every call, e.g. `create berth-…`, in order. */
  readonly calls: string[];
  /** Ids of sandboxes that run work of their user's: `listProcesses` lists a process of theirs ({@link FAKE_WORK}). */
  readonly busy: Set<string>;
  /** Whether the engine answers. */
  reachable: boolean;
  /**
   * Ids of sandboxes whose new session shells (a bare `/bin/sh`) start but never answer, until
   * the sandbox stops: what a sandbox whose every pid a fork bomb holds does to a shell that
   * must fork to set itself up. (`/bin/sh -c …` execs still run.)
   */
  readonly stalled: Set<string>;
  /** How long a stop takes, ms: the sandbox runs meanwhile, as under an engine's grace period. @default 0 */
  stopDelayMs: number;
  /** Makes the next call of `method` throw `error`. */
  failNext(method: keyof SandboxDriverV1, error: Error): void;
  /** Removes a sandbox behind the runtime's back (what `docker rm -f` does). */
  removeFromOutside(id: string): void;
  /** Stops a sandbox behind the runtime's back (an engine restart). */
  stopFromOutside(id: string): void;
  /** Adds a sandbox made by someone else (an earlier release, an operator). */
  plant(name: string, labels: Record<string, string>, state?: DriverSandbox['state']): FakeSandbox;
}

/** Creates the fake driver; sandboxes are shared by every runtime given this driver (a restart). */
/** A fake container id shaped as an engine's (64 hex digits, as cgroups name them): the `n`th made. */
export const fakeId = (n: number): string => n.toString(16).padStart(64, 'f');

export function createFakeDriver(
  options: {
    processList?: boolean;
    hostFolders?: boolean;
    /** The images the engine has; absent: every image. */
    images?: readonly string[];
    /** Whether it can freeze a sandbox (`pause`): its shells get SIGSTOP, and SIGCONT at `unpause`. */
    pause?: boolean;
  } = {},
): FakeDriver {
  const sandboxes = new Map<string, FakeSandbox>();
  const calls: string[] = [];
  const failures = new Map<string, Error>();
  let next = 1;

  const kill = (sandbox: FakeSandbox): void => {
    for (const child of sandbox.processes) child.kill('SIGKILL');
    sandbox.processes.clear();
    driver.stalled.delete(sandbox.id);
  };
  const byNameOrId = (key: string): FakeSandbox | undefined => sandboxes.get(key) ?? [...sandboxes.values()].find((sandbox) => sandbox.name === key);
  const gone = (what: string): SandboxError => new SandboxError('SANDBOX_GONE', `${what} does not exist on the fake engine`);
  const view = (sandbox: FakeSandbox): DriverSandbox => ({ id: sandbox.id, name: sandbox.name, state: sandbox.state, labels: { ...sandbox.labels } });

  const driver: FakeDriver = {
    specificationVersion: 'v1',
    engine: 'fake',
    specRevision: 'fake-1',
    capabilities: { networkIsolation: true, hostFolders: options.hostFolders ?? true, processList: options.processList ?? true },
    sandboxes,
    calls,
    busy: new Set(),
    reachable: true,
    stalled: new Set(),
    stopDelayMs: 0,
    failNext: (method, error) => void failures.set(method, error),
    removeFromOutside(id) {
      const sandbox = sandboxes.get(id);
      if (!sandbox) return;
      kill(sandbox);
      sandboxes.delete(id);
    },
    stopFromOutside(id) {
      const sandbox = sandboxes.get(id);
      if (!sandbox) return;
      kill(sandbox);
      sandbox.state = 'stopped';
    },
    plant(name, labels, state = 'running') {
      const sandbox: FakeSandbox = { id: fakeId(next++), name, state, labels, spec: {} as SandboxSpec, processes: new Set() };
      sandboxes.set(sandbox.id, sandbox);
      return sandbox;
    },
    async ping() {
      calls.push('ping');
      if (!driver.reachable) throw new EngineUnavailableError('fake://engine', 'the fake engine does not answer');
    },
    async describe() {
      return { engine: 'fake', endpoint: 'fake://engine', discovery: 'given', version: '1', apiVersion: '1', warnings: [] };
    },
    async hasImage(image) {
      return options.images?.includes(image) ?? true;
    },
    async prepareImage() {},
    async inspect(key) {
      calls.push(`inspect ${key}`);
      const failure = failures.get('inspect');
      if (failure) {
        failures.delete('inspect');
        throw failure;
      }
      const sandbox = byNameOrId(key);
      return sandbox ? view(sandbox) : undefined;
    },
    async list(labels) {
      return [...sandboxes.values()].filter((sandbox) => Object.entries(labels).every(([key, value]) => sandbox.labels[key] === value)).map(view);
    },
    async create(spec) {
      calls.push(`create ${spec.name}`);
      const failure = failures.get('create');
      if (failure) {
        failures.delete('create');
        throw failure;
      }
      if (byNameOrId(spec.name)) return undefined;
      const sandbox: FakeSandbox = { id: fakeId(next++), name: spec.name, state: 'stopped', labels: { ...spec.labels }, spec, processes: new Set() };
      sandboxes.set(sandbox.id, sandbox);
      return sandbox.id;
    },
    async start(id) {
      calls.push(`start ${id}`);
      const failure = failures.get('start');
      if (failure) {
        failures.delete('start');
        throw failure;
      }
      const sandbox = sandboxes.get(id);
      if (!sandbox) throw gone(id);
      sandbox.state = 'running';
    },
    async stop(id) {
      calls.push(`stop ${id}`);
      if (driver.stopDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, driver.stopDelayMs));
      const sandbox = sandboxes.get(id);
      if (!sandbox) return;
      kill(sandbox);
      sandbox.state = 'stopped';
    },
    ...(options.pause
      ? {
          async pause(id: string) {
            calls.push(`pause ${id}`);
            const failure = failures.get('pause');
            if (failure) {
              failures.delete('pause');
              throw failure;
            }
            const sandbox = sandboxes.get(id);
            if (sandbox?.state !== 'running') throw new SandboxError('SANDBOX_GONE', `sandbox ${id} is not running on the fake engine`);
            for (const child of sandbox.processes) child.kill('SIGSTOP');
            sandbox.state = 'paused';
          },
        }
      : {}),
    async unpause(id) {
      calls.push(`unpause ${id}`);
      const sandbox = sandboxes.get(id);
      if (sandbox?.state !== 'paused') throw new SandboxError('ENGINE_ERROR', `sandbox ${id} is not paused on the fake engine`);
      for (const child of sandbox.processes) child.kill('SIGCONT');
      sandbox.state = 'running';
    },
    async remove(id) {
      calls.push(`remove ${id}`);
      driver.removeFromOutside(id);
    },
    async rename(id, name) {
      calls.push(`rename ${id} ${name}`);
      const sandbox = sandboxes.get(id);
      if (!sandbox) throw gone(id);
      if (byNameOrId(name)) throw new SandboxError('SANDBOX_CONFLICT', `the name ${name} is taken`);
      sandbox.name = name;
    },
    // A running sandbox lists its main process (the spec's command: the runtime's launcher) and,
    // when busy, its user's work; not the execs, which are host shells the runtime opened.
    async listProcesses(id) {
      const sandbox = sandboxes.get(id);
      if (!sandbox) throw gone(id);
      if (sandbox.state !== 'running') return { commands: [] };
      return { commands: [...(sandbox.spec.command ? [sandbox.spec.command.join(' ')] : []), ...(driver.busy.has(id) ? [FAKE_WORK] : [])] };
    },
    async openChannel(id, command, channelOptions): Promise<ExecChannel> {
      const sandbox = sandboxes.get(id);
      if (!sandbox) throw gone(id);
      if (sandbox.state !== 'running') throw new SandboxError('SANDBOX_GONE', `sandbox ${sandbox.name} is not running`);
      // detached: the shell leads its own process group, as an engine's exec does.
      const [file = '/bin/sh', ...args] = driver.stalled.has(id) && command.length === 1 ? ['sleep', '3600'] : command;
      // The fake's /workspace is the host's /tmp, where its shells always started; any other
      // working folder is the host's own.
      const workingDir = channelOptions?.workingDir;
      const cwd = workingDir === undefined || workingDir === WORKSPACE_TARGET ? '/tmp' : workingDir;
      const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], cwd, detached: true });
      sandbox.processes.add(child);
      const closeListeners: Array<() => void> = [];
      let closed = false;
      child.on('close', () => {
        closed = true;
        sandbox.processes.delete(child);
        for (const listener of closeListeners.splice(0)) listener();
      });
      child.stdin.on('error', () => undefined);
      return {
        write: (data) => void (closed || child.stdin.write(data)),
        end: () => child.stdin.end(),
        destroy: () => child.kill('SIGKILL'),
        onStdout: (listener) => void child.stdout.on('data', listener),
        onStderr: (listener) => void child.stderr.on('data', listener),
        onClose: (listener) => (closed ? listener() : void closeListeners.push(listener)),
        exitCode: async () => child.exitCode ?? undefined,
      };
    },
  };
  return driver;
}
