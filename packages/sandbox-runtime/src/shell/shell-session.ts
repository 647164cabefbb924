import { createHash, randomBytes } from 'node:crypto';
import { INTERRUPTED_EXIT_CODE, SandboxError, TIMEOUT_EXIT_CODE } from '@berth/core';
import type { ExecChannel } from '@berth/core/driver';
import { FrameReader } from './frame-reader.js';
import { createHeadTailBuffer, type HeadTailBuffer, tapBuffer } from '../output/head-tail-buffer.js';
import { buildCommandScript, buildEnvironmentUpdate, buildSessionInit } from './shell-protocol.js';

/** The session ended (the container stopped or was removed, the engine restarted). */
export class SessionClosedError extends SandboxError {
  /** Whether the command had started when the session ended; a command that never started is safe to retry. */
  readonly started: boolean;

  constructor(started: boolean, message: string) {
    super('SANDBOX_SESSION_CLOSED', message, { isRetryable: !started });
    this.started = started;
  }
}

/** What one framed command produced, before decoding and masking. */
export interface SessionRunResult {
  /** The command's exit status: `TIMEOUT_EXIT_CODE` (124) when it was killed at its timeout, 130 when stopped through its signal. */
  readonly status: number;
  readonly stdout: HeadTailBuffer;
  readonly stderr: HeadTailBuffer;
  readonly timedOut: boolean;
  /** A process the command left behind still holds the session's output: retire the session. */
  readonly leftovers?: boolean;
  /** The command ended its shell (an `exit` after its own EXIT trap, an `exec`) before its `cd` and `export` were saved. */
  readonly stateNotSaved?: boolean;
  /** The session's state folder was gone: the command did not run. */
  readonly stateLost?: boolean;
  /** The command deleted the session's state folder. */
  readonly stateDeleted?: boolean;
  /** Berth's own write of the command into the session failed (ENOMEM at a full bound, say): it did not run. */
  readonly notWritten?: boolean;
}

/** How long a new shell may take to answer its set-up before it is deemed unable to hold a session. */
export const SHELL_READY_TIMEOUT_MS = 10_000;

/** Bytes outside every frame a session tolerates (a background job writing to it) before it is retired. */
export const STRAY_OUTPUT_LIMIT = 64 * 1024;

/** One command for {@link ShellSession.run}. */
export interface SessionRunOptions {
  readonly command: string;
  readonly cwd?: string;
  readonly stdin?: Uint8Array;
  readonly timeoutMs: number;
  /** Bytes kept per stream. */
  readonly outputLimit: number;
  /** The environment the command must see; re-sent only when it changed since the last command. */
  readonly variables: Readonly<Record<string, string>>;
  /** Kills the command's process tree; called at the timeout, or when `signal` aborts. */
  readonly kill: () => Promise<void>;
  /** Stops the command as the timeout does; the result has status 130. */
  readonly signal?: AbortSignal;
  /** Each chunk of the command's stdout and stderr as it comes. */
  readonly onStdout?: (chunk: Uint8Array) => void;
  readonly onStderr?: (chunk: Uint8Array) => void;
  /** How long to wait after `kill` before giving the session up. @default 10000 */
  readonly killGraceMs?: number;
}

// A frozen environment (the resolver's remembered requests are) cannot change: its digest is
// worked out once, not for every command.
const frozenDigests = new WeakMap<object, string>();

/** A digest of an environment, so a session remembers which one it holds without keeping the values. */
export function environmentDigest(variables: Readonly<Record<string, string>>): string {
  const known = frozenDigests.get(variables);
  if (known !== undefined) return known;
  const hash = createHash('sha256');
  for (const name of Object.keys(variables).sort()) hash.update(`${name}\0${variables[name]}\0`);
  const digest = hash.digest('hex');
  if (Object.isFrozen(variables)) frozenDigests.set(variables, digest);
  return digest;
}

// Markers come from a pool of random bytes filled 256 at a time: as random, one call fewer per command.
const MARKER_BYTES = 12;
let markerPool = Buffer.alloc(0);
let markerOffset = 0;

/** A fresh random marker id (96 bits, hex) for one command's frames. */
function markerId(): string {
  if (markerOffset + MARKER_BYTES > markerPool.length) {
    markerPool = randomBytes(MARKER_BYTES * 256);
    markerOffset = 0;
  }
  markerOffset += MARKER_BYTES;
  return markerPool.toString('hex', markerOffset - MARKER_BYTES, markerOffset);
}

/**
 * A long-lived `/bin/sh` inside a sandbox, driven over its stdin: each command is framed with
 * a random marker, runs in a child of its own with its own stdin, and leaves its
 * directory and exports to the next. One command at a time; the caller queues.
 */
export class ShellSession {
  /** The state folder inside the sandbox (directory, exports, the running command's pid). */
  readonly stateDir: string;
  private readonly channel: ExecChannel;
  private readonly stdoutReader: FrameReader;
  private readonly stderrReader: FrameReader;
  private closed = false;
  private busy = false;
  private environmentKey: string;
  /** The variable names this session's environment holds. */
  environmentNames: string[];
  private closeListeners: Array<() => void> = [];

  private constructor(options: {
    channel: ExecChannel;
    stateDir: string;
    stdoutReader: FrameReader;
    stderrReader: FrameReader;
    variables: Readonly<Record<string, string>>;
  }) {
    this.channel = options.channel;
    this.stateDir = options.stateDir;
    this.stdoutReader = options.stdoutReader;
    this.stderrReader = options.stderrReader;
    this.environmentKey = environmentDigest(options.variables);
    this.environmentNames = Object.keys(options.variables);
  }

  /**
   * Turns a fresh `/bin/sh` channel into a session: sends the init script (with the
   * environment) and waits for its ready frame. Throws when the shell does not answer in
   * `readyTimeoutMs`, so the caller can fall back to one exec per command.
   */
  static async open(options: {
    channel: ExecChannel;
    variables: Readonly<Record<string, string>>;
    cwd?: string;
    readyTimeoutMs?: number;
    /** A retired session whose state folder (cd, exports) this one takes over. */
    successorOf?: ShellSession;
  }): Promise<ShellSession> {
    const { channel } = options;
    const stateDir = options.successorOf?.stateDir ?? `/tmp/.berth-${randomBytes(8).toString('hex')}`;
    const readyId = randomBytes(12).toString('hex');
    const stdoutReader = new FrameReader();
    const stderrReader = new FrameReader();
    let closedEarly = false;
    let failReady: ((error: Error) => void) | undefined;
    let session: ShellSession | undefined;
    // Bytes outside every frame come from something else writing to the session's pipes (a
    // process a command left behind, or one that reopened them): past the limit the session is
    // retired, so they stop reaching the gateway.
    // While a command runs, its own frame is still open on the other stream: the check waits
    // for the command's end (see run()), so its result is never lost to a job it started.
    const checkStray = (): void => {
      if (session && !session.busy && session.strayOverLimit()) session.close();
    };
    channel.onStdout((chunk) => {
      stdoutReader.push(chunk);
      checkStray();
    });
    channel.onStderr((chunk) => {
      stderrReader.push(chunk);
      checkStray();
    });
    channel.onClose(() => {
      closedEarly = true;
      failReady?.(new SessionClosedError(false, "the sandbox's /bin/sh ended before it was ready; check that the image has /bin/sh"));
    });
    await new Promise<void>((resolve, reject) => {
      failReady = reject;
      if (closedEarly) return reject(new SessionClosedError(false, "the sandbox's /bin/sh ended before it was ready; check that the image has /bin/sh"));
      const readyTimeoutMs = options.readyTimeoutMs ?? SHELL_READY_TIMEOUT_MS;
      const timer = setTimeout(
        () => reject(new SandboxError('SANDBOX_SHELL_UNUSABLE', `the sandbox's /bin/sh did not answer within ${readyTimeoutMs} ms`)),
        readyTimeoutMs,
      );
      let pending = 2;
      const done = (): void => {
        if (--pending === 0) {
          clearTimeout(timer);
          resolve();
        }
      };
      stdoutReader.expect(readyId, createHeadTailBuffer(1024), done);
      stderrReader.expect(readyId, createHeadTailBuffer(1024), done);
      channel.write(
        buildSessionInit({
          stateDir,
          readyId,
          variables: options.variables,
          ...(options.cwd ? { cwd: options.cwd } : {}),
          ...(options.successorOf ? { inherit: { previousNames: options.successorOf.environmentNames } } : {}),
        }),
      );
    }).catch((error: unknown) => {
      channel.destroy();
      throw error;
    });
    const opened = new ShellSession({ channel, stateDir, stdoutReader, stderrReader, variables: options.variables });
    session = opened;
    channel.onClose(() => opened.markClosed());
    if (closedEarly) opened.markClosed();
    return opened;
  }

  /** False once the shell or its connection ended; a new session is needed then. */
  get alive(): boolean {
    return !this.closed;
  }

  /** Whether a command is running now. */
  get running(): boolean {
    return this.busy;
  }

  /** Calls `listener` once when the session ends. */
  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  /** Runs one command; resolves when both of its streams closed their frames. */
  run(options: SessionRunOptions): Promise<SessionRunResult> {
    if (this.closed) return Promise.reject(new SessionClosedError(false, 'the sandbox shell has ended'));
    if (this.busy) return Promise.reject(new SandboxError('SANDBOX_SESSION_BUSY', 'a command is already running in this session; queue commands per sandbox'));
    this.busy = true;
    const id = markerId();
    const stdout = tapBuffer(createHeadTailBuffer(options.outputLimit), options.onStdout);
    const stderr = tapBuffer(createHeadTailBuffer(options.outputLimit), options.onStderr);
    let script = buildCommandScript({
      id,
      command: options.command,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
    });
    const key = environmentDigest(options.variables);
    if (key !== this.environmentKey) {
      script = buildEnvironmentUpdate(options.variables, this.environmentNames) + script;
      this.environmentKey = key;
      this.environmentNames = Object.keys(options.variables);
    }
    return new Promise<SessionRunResult>((resolve, reject) => {
      let started = false;
      let timedOut = false;
      let interrupted = false;
      let pending = 2;
      let status = 0;
      let flags = '';
      let timer: NodeJS.Timeout | undefined;
      let graceTimer: NodeJS.Timeout | undefined;
      // The timeout and an abort end the command the same way: its process tree is killed, and a
      // shell that does not come back after the kill is given up (the next command gets a new one).
      const stop = (reason: 'timeout' | 'abort'): void => {
        if (timedOut || interrupted) return;
        if (reason === 'timeout') timedOut = true;
        else interrupted = true;
        clearTimeout(timer);
        options.kill().catch(() => undefined);
        graceTimer = setTimeout(() => this.close(), options.killGraceMs ?? 10_000);
      };
      const onAbort = (): void => stop('abort');
      const settle = (outcome: { result: SessionRunResult } | { error: Error }): void => {
        clearTimeout(timer);
        clearTimeout(graceTimer);
        options.signal?.removeEventListener('abort', onAbort);
        this.closeListeners = this.closeListeners.filter((listener) => listener !== onClosed);
        this.busy = false;
        if ('result' in outcome) resolve(outcome.result);
        else reject(outcome.error);
        if (this.strayOverLimit()) this.close();
      };
      const onEnd = (value: number, fromStdout: boolean, endFlags: string): void => {
        if (fromStdout) status = value;
        else flags = endFlags;
        if (--pending === 0) {
          settle({
            result: {
              status: timedOut ? TIMEOUT_EXIT_CODE : interrupted ? INTERRUPTED_EXIT_CODE : status,
              stdout,
              stderr,
              timedOut,
              leftovers: flags.includes('L'),
              stateNotSaved: flags.includes('T'),
              stateLost: flags.includes('G'),
              stateDeleted: flags.includes('D'),
              notWritten: flags.includes('W'),
            },
          });
        }
      };
      const onClosed = (): void => {
        if (timedOut || interrupted) {
          settle({ result: { status: timedOut ? TIMEOUT_EXIT_CODE : INTERRUPTED_EXIT_CODE, stdout, stderr, timedOut } });
          return;
        }
        settle({
          error: new SessionClosedError(
            started,
            started ? 'the sandbox stopped while the command ran; run it again' : 'the sandbox shell ended before the command started',
          ),
        });
      };
      this.closeListeners.push(onClosed);
      this.stdoutReader.expect(
        id,
        stdout,
        (value, endFlags) => onEnd(value, true, endFlags),
        () => (started = true),
      );
      // stderr has no start marker: one chunk fewer through the engine per command. Its frame
      // starts now; nothing else writes to it between commands, as a process a command leaves
      // holding it retires the session (flag L), and what arrived since the last frame ended
      // was dropped as stray. The stdout start marker alone says the command started.
      this.stderrReader.expect(id, stderr, (value, endFlags) => onEnd(value, false, endFlags), undefined, { startMarker: false });
      timer = setTimeout(() => stop('timeout'), options.timeoutMs);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.channel.write(script);
    });
  }

  /** Whether more than {@link STRAY_OUTPUT_LIMIT} bytes arrived outside every frame. */
  private strayOverLimit(): boolean {
    return this.stdoutReader.stray + this.stderrReader.stray > STRAY_OUTPUT_LIMIT;
  }

  /**
   * Ends the shell: it is told to exit, its stdin is closed and the connection dropped. The
   * `exit` is what ends it on Podman's exec API, which keeps an exec's stdin open after the
   * connection ends: without it every retired session's shell stayed, idle, for the sandbox's
   * lifetime (under gVisor, where every shell is an exec: docs/gvisor.md).
   */
  close(): void {
    if (this.closed) return;
    this.channel.write('exit\n');
    this.channel.end();
    this.channel.destroy();
    this.markClosed();
  }

  private markClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.stdoutReader.reset();
    this.stderrReader.reset();
    const listeners = this.closeListeners;
    this.closeListeners = [];
    for (const listener of listeners) listener();
  }
}
