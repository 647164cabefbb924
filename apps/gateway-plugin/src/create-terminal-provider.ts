import {
  getActiveSession,
  SESSION_ENVIRONMENT_VARIABLES,
  SessionAttributionError,
  sessionFromEnvironment,
  type SessionContext,
  type CreateEnvironmentOptions,
  type ExecuteResult,
  type HostLogger,
  type TerminalEnvironment,
  type TerminalEnvironmentProviderV1,
} from '@berth/core';
import type { Berth } from './create-berth.js';

/** Options of {@link createTerminalProvider}. */
export interface CreateTerminalProviderOptions {
  /** The name the host's config selects, e.g. `berth-docker`. */
  readonly name: string;
  /**
   * The gateway's environment: read at each command for the Python gateway's `HERMES_SESSION_*`
   * variables when `sessionSource` is `environment`, and checked for them otherwise.
   * @default process.env
   */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  readonly logger?: HostLogger;
  /** Where `execute()` finds the session (see `BerthHostV1.sessionSource`). @default 'context' */
  readonly sessionSource?: 'context' | 'environment';
}

/** Joins stdout and stderr the way a terminal shows them: stdout, then stderr on its own line. */
export function combineOutput(stdout: string, stderr: string): string {
  if (stdout.length === 0) return stderr;
  if (stderr.length === 0) return stdout;
  return stdout.endsWith('\n') ? stdout + stderr : `${stdout}\n${stderr}`;
}

/**
 * The terminal environment provider Berth registers with a host. Each `execute()` resolves its
 * sandbox from the session active at that moment, so one environment handle serves every user
 * of the gateway, concurrently, each in their own sandbox.
 */
export function createTerminalProvider(berth: Berth, options: CreateTerminalProviderOptions): TerminalEnvironmentProviderV1 {
  const environment = options.environment ?? process.env;
  const sessionSource = options.sessionSource ?? 'context';
  let warnedNoSession = false;

  /** The session when no `runWithSession` is active: the environment's only for one-command-per-process hosts. */
  const sessionOutsideContext = (): SessionContext | undefined => {
    if (sessionSource === 'environment') return sessionFromEnvironment(environment);
    if (!berth.config.docker_user_sandbox) return undefined;
    const named = SESSION_ENVIRONMENT_VARIABLES.filter((name) => environment[name]);
    if (named.length > 0) {
      throw new SessionAttributionError(
        `no session is active, and ${named.join(', ')} in the process environment would be shared by every message this process handles at once, ` +
          'so Berth cannot tell whose sandbox the command belongs to; wrap each message in runWithSession(...) from @berth/core, ' +
          "or, if this host runs one command per process, register with sessionSource: 'environment'",
      );
    }
    if (!warnedNoSession) {
      warnedNoSession = true;
      options.logger?.warn(
        'berth: a command ran outside runWithSession, so it runs in the task sandbox (the legacy layout); ' +
          'wrap each message in runWithSession(...) so each user gets their own sandbox',
      );
    }
    return undefined;
  };
  // Scope key -> live handles that ran in it, so a non-persistent cleanup never removes a
  // container another message of the same user is still using.
  const users = new Map<string, Set<object>>();
  let warnedImage = false;
  return {
    specificationVersion: 'v1',
    name: options.name,
    async createEnvironment(createOptions: CreateEnvironmentOptions = {}): Promise<TerminalEnvironment> {
      if (createOptions.image && createOptions.image !== berth.config.docker_image && !warnedImage) {
        warnedImage = true;
        options.logger?.warn(
          `berth: the host asked for image ${createOptions.image}, but every user's sandbox uses ` +
            `terminal.docker_image (${berth.config.docker_image}); set docker_image in the terminal config instead`,
        );
      }
      const handle = {};
      const scopes = new Set<string>();
      return {
        async execute(command, executeOptions = {}): Promise<ExecuteResult> {
          // The session is read now, not when the environment was made: the host may reuse one
          // environment for every message.
          const session = getActiveSession() ?? sessionOutsideContext();
          const request = berth.request({ ...(session ? { session } : {}), ...(createOptions.taskId !== undefined ? { taskId: createOptions.taskId } : {}) });
          scopes.add(request.scope.key);
          const holders = users.get(request.scope.key) ?? new Set();
          users.set(request.scope.key, holders);
          holders.add(handle);
          const cwd = executeOptions.cwd ?? createOptions.cwd;
          const timeout = executeOptions.timeout ?? createOptions.timeout;
          const result = await berth.executeRequest(request, command, {
            ...(cwd !== undefined ? { cwd } : {}),
            ...(timeout !== undefined ? { timeout } : {}),
            ...(executeOptions.stdin !== undefined ? { stdin: executeOptions.stdin } : {}),
          });
          return { output: combineOutput(result.stdout, result.stderr), returncode: result.exitCode };
        },
        async cleanup(): Promise<void> {
          for (const scopeKey of scopes) {
            const holders = users.get(scopeKey);
            holders?.delete(handle);
            if (holders && holders.size > 0) continue;
            users.delete(scopeKey);
            // Persistent sandboxes outlive the handle; otherwise the container goes, the files stay.
            if (!berth.config.container_persistent) await berth.backend.remove(scopeKey);
          }
          scopes.clear();
        },
      };
    },
  };
}
