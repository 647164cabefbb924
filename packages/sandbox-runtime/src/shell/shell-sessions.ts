import { SandboxError, type ExecRequest, type SandboxRequest } from '@berth/core';
import type { OpenExecChannel } from '@berth/core/driver';
import { channelsFolderOf, openFifoChannel } from './fifo-channel.js';
import { KillerShell } from './killer-shell.js';
import { FALLBACK_STATE_DIR, runExecOnce } from './run-exec-once.js';
import { messageOf, type RuntimeContext } from '../runtime-context.js';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import type { SandboxLifecycle } from '../lifecycle/sandbox-lifecycle.js';
import { KILLER_INIT } from './shell-protocol.js';
import { environmentDigest, SessionClosedError, ShellSession, type SessionRunResult } from './shell-session.js';
import { WORKSPACE_TARGET } from '../sandbox-spec.js';
import { waitAtMost } from '../wait-at-most.js';

/** How long a command may run before Berth checks whether its sandbox was paused from outside. */
const PAUSE_CHECK_AFTER_MS = 1_500;

/** The shells of each sandbox: the persistent session commands run in, and the kill shell. */
export interface ShellSessions {
  /** Acquires the sandbox and, in session mode, a live shell session. */
  ensureReady(entry: SandboxEntry, request: SandboxRequest): Promise<void>;
  /** Runs one command in the sandbox's session (or one exec, in the fallback mode). */
  runOnce(entry: SandboxEntry, request: SandboxRequest, exec: ExecRequest, taps?: OutputTaps): Promise<SessionRunResult>;
  /** Ends the sandbox's session and kill shell; the next command opens new ones. */
  drop(entry: SandboxEntry): void;
}

/** Where each chunk of a command's output goes as it comes (before masking: the caller masks). */
export interface OutputTaps {
  readonly onStdout?: (chunk: Uint8Array) => void;
  readonly onStderr?: (chunk: Uint8Array) => void;
}

/** Ends a sandbox's session and kill shell, and forgets how its shells were opened: it stopped, or is stopping. */
export function dropShells(entry: SandboxEntry): void {
  entry.shellsByExec = false;
  entry.launcherAnswered = false;
  entry.session?.close();
  entry.session = undefined;
  entry.killer?.close();
  entry.killer = undefined;
  entry.killerOpening = undefined;
}

/** Builds the shell handling over the lifecycle. */
export function createShellSessions(context: RuntimeContext, lifecycle: SandboxLifecycle): ShellSessions {
  const { driver, settings, logger } = context;

  const channelOpener =
    (entry: SandboxEntry): OpenExecChannel =>
    (command, options) => {
      const id = entry.containerId;
      if (!id) return Promise.reject(new SessionClosedError(false, `sandbox ${entry.name} has no container`));
      return driver.openChannel(id, command, options);
    };

  // The sandbox's own shells (the session and the kill shell) start through its launcher when it
  // has one (fifo-channel.ts); otherwise, or when the launcher does not answer, through the
  // engine's exec, and this sandbox's shells keep to the exec until it is started again.
  const shellOpener =
    (entry: SandboxEntry): OpenExecChannel =>
    async (command, options) => {
      // gVisor cannot write the launcher's pipes (oci-runtime.ts): its shells take the exec at once.
      if (driver.capabilities.hostFolders && entry.paths && !entry.shellsByExec && !(await context.ociRuntime())?.gvisor) {
        // A sandbox just started may take a while to reach its launcher on a busy machine: its
        // first shells wait longer for it than later ones, which find it reading.
        const channel = await openFifoChannel(channelsFolderOf(entry.paths.folder), entry.launcherAnswered ? {} : { readerWaitMs: context.firstLaunchWaitMs });
        if (channel) {
          entry.launcherAnswered = true;
          return channel;
        }
        entry.shellsByExec = true;
        logger?.info(`berth: the launcher of ${entry.name} did not answer; its shells go through the engine's exec until it is started again`);
      }
      return channelOpener(entry)(command, options);
    };

  const drop = dropShells;

  const openKiller = (entry: SandboxEntry): Promise<KillerShell | undefined> => {
    if (entry.killer?.alive) return Promise.resolve(entry.killer);
    entry.killerOpening ??= shellOpener(entry)(['/bin/sh'])
      .then(async (channel) => {
        const killer = new KillerShell(channel);
        entry.killer = killer;
        // An exec that is still starting when the sandbox is paused holds the engine's lock on
        // it; waiting for the answer makes sure this one has started.
        await waitAtMost(killer.ready, 10_000);
        return killer;
      })
      .catch(() => undefined)
      .finally(() => (entry.killerOpening = undefined));
    return entry.killerOpening;
  };

  const ensureReady: ShellSessions['ensureReady'] = async (entry, request) => {
    // Frozen while idle: thawed, its session (and its cd and export) goes on where it stopped.
    await lifecycle.thaw(entry);
    if (entry.containerId && entry.running && (entry.mode === 'exec' || entry.session?.alive)) return;
    // The kill shell stays when it is alive: a session retired for its leftovers needs no new one.
    entry.session?.close();
    entry.session = undefined;
    if (!entry.running) drop(entry);
    const startsBefore = entry.starts ?? 0;
    await lifecycle.acquire(entry, request);
    // The egress proxy learns the sandbox's address before its shells get the proxy's variables.
    await context.egress.attach(entry);
    await openShells(entry, request, (entry.starts ?? 0) > startsBefore);
  };

  /** Opens the session and the kill shell; `startedNow`: this acquire created or started the sandbox. */
  const openShells = async (entry: SandboxEntry, request: SandboxRequest, startedNow: boolean): Promise<void> => {
    if (entry.mode === 'exec') return;
    // The kill shell starts beside the session and is up before the first command runs: it must
    // exist before anything needs killing, and an exec still starting when someone pauses the
    // sandbox would hold the engine's lock on it (inspect, unpause and rm all wait) until thawed.
    const killerReady = openKiller(entry);
    // Only a sandbox this process has just started, where no session held before, tells whether
    // the image's shell can hold a session. One running before (adopted from an earlier gateway,
    // or one that held a session) whose new shell does not answer is in trouble instead.
    const decidesMode = startedNow && entry.mode !== 'session';
    const channel = await shellOpener(entry)(['/bin/sh'], { workingDir: WORKSPACE_TARGET });
    try {
      const session = await ShellSession.open({
        channel,
        variables: context.egress.variables(entry, request),
        readyTimeoutMs: context.shellReadyTimeoutMs,
        ...(entry.retired ? { successorOf: entry.retired } : {}),
      });
      entry.retired = undefined;
      entry.session = session;
      entry.mode = 'session';
      session.onClose(() => {
        if (entry.session === session) entry.session = undefined;
      });
      // The kill shell ends this session's running command should the gateway's connection die.
      (await killerReady)?.watch(session.stateDir);
    } catch (error) {
      void killerReady.then((killer) => killer?.close());
      // A shell that does not answer (it started, but cannot fork to run its set-up) in a sandbox
      // that was already running is a sandbox in trouble, not an image whose shell cannot hold a
      // session: a fork bomb a command left running holds every pid. It is restarted, and the
      // retry's fresh sandbox decides the fallback to one exec per command.
      const unanswered = !decidesMode && error instanceof SandboxError && error.code === 'SANDBOX_SHELL_UNUSABLE';
      if ((error instanceof SessionClosedError && !error.started) || unanswered) {
        // The shell could not even start, or not answer: the sandbox is full (a fork bomb's
        // leftovers holding every pid, say). Stopping it ends every process in it; the retry
        // starts it again with the files intact.
        logger?.warn(`berth: no shell could ${unanswered ? 'answer' : 'start'} in ${entry.name}; restarting the sandbox`);
        await lifecycle.stop(entry, () => drop(entry)).catch(() => undefined);
        throw unanswered ? new SessionClosedError(false, `the shell of ${entry.name} did not answer; the sandbox was restarted`) : error;
      }
      if (error instanceof SessionClosedError || settings.docker_exec_mode === 'session') throw error;
      entry.mode = 'exec';
      logger?.warn(`berth: the shell of ${entry.name} cannot hold a session (${messageOf(error)}); running one exec per command`);
    }
  };

  const killCommand = async (entry: SandboxEntry): Promise<void> => {
    // Not awaited: the kill request waits in the kill shell's stdin and runs once thawed, and an
    // inspect can be slow while a fork bomb fills the sandbox.
    void lifecycle.thawIfPaused(entry);
    if (entry.mode === 'session' && entry.session) {
      const stateDir = entry.session.stateDir;
      const killer = await openKiller(entry);
      if (killer?.alive) {
        killer.kill(stateDir);
        return;
      }
    }
    // No kill shell: a one-off exec (fails only if the sandbox's pid limit is exhausted).
    const stateDir = entry.session?.stateDir ?? FALLBACK_STATE_DIR;
    const channel = await channelOpener(entry)(['/bin/sh', '-c', `${KILLER_INIT}__berth_kill "$1"`, 'berth', stateDir]);
    channel.onStdout(() => undefined);
    channel.onStderr(() => undefined);
    channel.end();
  };

  const runOnce: ShellSessions['runOnce'] = async (entry, request, exec, taps = {}) => {
    const timeoutMs = Math.max(1, (exec.timeout ?? settings.timeout) * 1000);
    const stdin = exec.stdin === undefined ? undefined : typeof exec.stdin === 'string' ? Buffer.from(exec.stdin, 'utf8') : exec.stdin;
    const common = {
      command: exec.command,
      ...(exec.cwd !== undefined ? { cwd: exec.cwd } : {}),
      ...(stdin !== undefined ? { stdin } : {}),
      timeoutMs,
      outputLimit: settings.docker_output_limit,
      variables: context.egress.variables(entry, request),
      kill: () => killCommand(entry),
      ...(exec.signal ? { signal: exec.signal } : {}),
      ...taps,
    };
    if (entry.mode === 'exec') {
      const key = environmentDigest(common.variables);
      const environmentChanged = entry.environmentKey !== undefined && entry.environmentKey !== key;
      entry.environmentKey = key;
      return runExecOnce({ ...common, environmentChanged, openChannel: channelOpener(entry) });
    }
    const session = entry.session;
    if (!session) throw new SessionClosedError(false, `the shell of ${entry.name} is gone`);
    // A kill shell retired for what was written into its pipes (or ended) is replaced beside the
    // command, not before it: it must exist when the timeout comes, and watch this session.
    if (entry.killer && !entry.killer.alive && !entry.killerOpening) void openKiller(entry).then((killer) => killer?.watch(session.stateDir));
    // Most commands answer well within this; a slower one costs one inspect, to catch a pause.
    const watchdog = setTimeout(() => void lifecycle.thawIfPaused(entry), PAUSE_CHECK_AFTER_MS);
    let result: SessionRunResult;
    try {
      result = await session.run(common);
    } finally {
      clearTimeout(watchdog);
    }
    if (result.timedOut && !session.alive) {
      // The kill did not bring the shell back (a fork bomb that outran it, say): stopping the
      // sandbox ends every process in it; the next command starts it again, files intact.
      logger?.warn(`berth: a timed-out command in ${entry.name} could not be killed; restarting the sandbox`);
      await lifecycle.stop(entry, () => drop(entry)).catch(() => undefined);
    } else if (result.leftovers || result.stateLost || result.stateDeleted || result.notWritten) {
      // A process the command left behind holds the session's output (or the session lost its
      // state): the next command gets a new session, and whatever the old one's pipes carry
      // from now on reaches nobody. A new session after leftovers takes over the state folder.
      if (result.leftovers && !result.stateLost && !result.stateDeleted) entry.retired = session;
      session.close();
    }
    return result;
  };

  return { ensureReady, runOnce, drop };
}
