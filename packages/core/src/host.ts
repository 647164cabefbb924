import { ConfigError, UnsupportedSpecificationError } from './errors.js';
import { describeForMessage } from './identity.js';

/** What the host passes when its terminal tool asks for an environment. */
export interface CreateEnvironmentOptions {
  /** Working directory inside the sandbox for commands that give none. */
  readonly cwd?: string;
  /** Default command timeout, in seconds. */
  readonly timeout?: number;
  /** The agent task, used for the legacy task-scoped layout. */
  readonly taskId?: string;
  /** An image to use instead of the configured one. */
  readonly image?: string;
  /** Extra container settings from the host (passed through to the backend where supported). */
  readonly containerConfig?: Readonly<Record<string, unknown>>;
}

/** Options of one {@link TerminalEnvironment.execute} call. */
export interface ExecuteOptions {
  readonly cwd?: string;
  /** Seconds. */
  readonly timeout?: number;
  readonly stdin?: string;
}

/** What the host's terminal tool shows the agent: output (stdout then stderr) and the exit code. */
export interface ExecuteResult {
  readonly output: string;
  readonly returncode: number;
}

/** A terminal environment handed to the host's terminal tool. */
export interface TerminalEnvironment {
  execute(command: string, options?: ExecuteOptions): Promise<ExecuteResult>;
  /** Releases the handle; the user's sandbox persists unless `container_persistent` is false. */
  cleanup(): Promise<void>;
}

/** A provider of terminal environments, registered with a host under its own name. */
export interface TerminalEnvironmentProviderV1 {
  readonly specificationVersion: 'v1';
  /** The name the host's config selects, e.g. `berth-docker`. */
  readonly name: string;
  createEnvironment(options: CreateEnvironmentOptions): Promise<TerminalEnvironment>;
}

/** The host's terminal tool registry (v1). */
export interface TerminalRegistryV1 {
  readonly specificationVersion: 'v1';
  /** Names the host reserves for its built-in environments (`docker`, `local`, ...). */
  readonly reservedNames?: readonly string[];
  registerEnvironmentProvider(provider: TerminalEnvironmentProviderV1): void;
}

/** A logger the host may hand over; Berth never logs a secret value. */
export interface HostLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** What a host gives a Berth plugin's `register()`. */
export interface BerthHostV1 {
  readonly specificationVersion: 'v1';
  readonly terminal: TerminalRegistryV1;
  /** The parsed `terminal:` section; Berth loads the default config file when absent. */
  readonly config?: unknown;
  /** The gateway's environment; `process.env` when absent. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  readonly logger?: HostLogger;
  /**
   * Where `execute()` finds the session of the message it serves. `context`: core's
   * `runWithSession` only, right for every host that handles messages concurrently in one
   * process. `environment`: the Python gateway's `HERMES_SESSION_*` variables in `environment`,
   * only for hosts that run one command per process (a variable read in a shared process races
   * between messages, so with `context` such variables are refused, never read).
   * @default 'context'
   */
  readonly sessionSource?: 'context' | 'environment';
}

/** A plugin a host registers. */
export interface BerthPluginV1 {
  readonly specificationVersion: 'v1';
  readonly name: string;
  register(host: BerthHostV1): Promise<void> | void;
}

/** Throws unless `host` implements a contract version this release knows. */
export function assertHost(host: unknown): asserts host is BerthHostV1 {
  const candidate = host as Partial<BerthHostV1> | null;
  if (candidate?.specificationVersion !== 'v1') throw new UnsupportedSpecificationError('host', candidate?.specificationVersion);
  if (candidate.terminal?.specificationVersion !== 'v1')
    throw new UnsupportedSpecificationError('host terminal registry', candidate.terminal?.specificationVersion);
  if (candidate.sessionSource !== undefined && candidate.sessionSource !== 'context' && candidate.sessionSource !== 'environment') {
    throw new ConfigError(
      'host.sessionSource',
      `host.sessionSource is ${describeForMessage(candidate.sessionSource)}: ` +
        "expected 'context' (runWithSession, the default) or 'environment' (one command per process)",
    );
  }
}
