import type { DriverDescription, EngineUsage } from './driver.js';
import { UnsupportedSpecificationError } from './errors.js';
import type { ResolvedEnvironment } from './resolve-environment.js';
import type { SandboxPaths } from './sandbox-paths.js';
import type { SandboxScope } from './scope.js';

/** Everything a backend needs to know about the sandbox a command runs in. */
export interface SandboxRequest {
  readonly scope: SandboxScope;
  readonly paths: SandboxPaths;
  /** The variables the commands see; never stored in the container's configuration. */
  readonly environment: ResolvedEnvironment;
}

/** One command to run in a sandbox. */
export interface ExecRequest {
  /** A shell command line, run by `/bin/sh -c` semantics in the sandbox. */
  readonly command: string;
  /** Working directory inside the sandbox; the session's current one when omitted. */
  readonly cwd?: string;
  /**
   * Seconds before the command's whole process tree is killed (exit 124). Absent: the backend
   * applies `terminal.timeout` (the runtime: its settings' `timeout`, default
   * `DEFAULT_COMMAND_TIMEOUT_SECONDS`); its callers pass on only a timeout they were given.
   */
  readonly timeout?: number;
  /** Standard input; `/dev/null` when omitted. */
  readonly stdin?: string | Uint8Array;
  /**
   * Stops the command: once aborted, its whole process tree is killed as at the timeout, and the
   * result has exit status 130 (a shell's status after Ctrl-C). The sandbox stays.
   */
  readonly signal?: AbortSignal;
  /**
   * Each piece of output as it comes, masked as the result is (a piece that may begin a secret is
   * held until it is known not to). The result still carries the output, within the output limit.
   */
  readonly onOutput?: (stream: 'stdout' | 'stderr', text: string) => void;
}

/** The exit status of a command stopped through {@link ExecRequest.signal}: 128 + SIGINT (request-protocol.ts, which the spawned client reads too). */
export { INTERRUPTED_EXIT_CODE } from './request-protocol.js';

/** What a command produced. */
export interface ExecResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  /** True when the command was killed at its timeout (exitCode 124). */
  readonly timedOut: boolean;
  /** True when output was cut to the limit; the cut is stated inside the output too. */
  readonly truncated: boolean;
  readonly durationMs: number;
}

/** State of a sandbox as the engine reports it. */
export type SandboxState = 'running' | 'stopped' | 'paused' | 'missing' | 'other';

/** One sandbox a backend owns, as `berth ls` shows it. */
export interface SandboxInfo {
  readonly scopeKey: string;
  readonly kind: 'user' | 'task';
  /** Platform and id of a user scope. */
  readonly platform?: string;
  readonly userId?: string;
  /** Task id of a task scope. */
  readonly taskId?: string;
  /** The host profile the sandbox belongs to; absent for the default profile. */
  readonly profile?: string;
  readonly containerId: string;
  readonly containerName: string;
  readonly state: SandboxState;
  readonly workspace: string;
  readonly home: string;
  /** ISO time of the last command, when known. */
  readonly lastUsed?: string;
  /** Use of the sandbox's own disk (`container_disk`), when it has one mounted. */
  readonly disk?: { readonly usedMb: number; readonly limitMb: number };
}

/** Optional abilities of a backend; the conformance suite skips what is absent. */
export interface BackendCapabilities {
  /** Commands run through a persistent shell (cd/export persist). */
  readonly persistentSession: boolean;
  /** Sandboxes of different scopes cannot reach each other over the network. */
  readonly networkIsolation: boolean;
  /** Sandboxes idle for longer than `lifetime_seconds` are stopped by the backend itself. */
  readonly idleStop: boolean;
  /** A gateway restart adopts existing sandboxes. */
  readonly adoption: boolean;
  /**
   * The workspace and home are the host folders `{sandbox_dir}/docker/{folder}/…` (absent: true).
   * False where they live elsewhere (a Kubernetes claim): the suite checks them from inside.
   */
  readonly hostFolders?: boolean;
  /**
   * `docker_network: false` leaves a sandbox nothing but loopback (absent: true). False where
   * an engine cannot remove the interface (Kubernetes: a deny-all NetworkPolicy instead).
   */
  readonly networkNone?: boolean;
}

/** The engine behind a backend, for `berth doctor`. */
export interface BackendDescription extends DriverDescription {
  /** Whether the image asked about is on the engine. */
  readonly image?: { readonly name: string; readonly present: boolean };
  /**
   * The one bound all sandboxes share (a parent cgroup's memory and pids), once the runtime set
   * it: `enforced` false when it could not (the reason is among the warnings).
   */
  readonly sharedBound?: { readonly parent?: string; readonly memoryMb: number; readonly pids: number; readonly enforced: boolean };
  /** The OCI runtime sandboxes run under, and what Berth does differently under it. */
  readonly runtime?: RuntimeDescription;
  /** Brokered variables and egress by domain, as the runtime applies them (docs/brokered-secrets.md). */
  readonly egress?: EgressDescription;
}

/** What `berth doctor` says of brokered variables and the egress mode. */
export interface EgressDescription {
  /** `docker_egress`. */
  readonly mode: 'open' | 'allowlist';
  /** `docker_egress_domains`, in allow-list mode. */
  readonly domains: readonly string[];
  /** Each brokered variable with the hosts its value goes to (`docker_secret_hosts`). */
  readonly brokered: Readonly<Record<string, readonly string[]>>;
  /** Where the egress proxy listens, when sandboxes use it. */
  readonly proxy?: string;
  /**
   * Why this engine's sandboxes cannot use the proxy, when they cannot: brokered variables then
   * reach them as placeholders nothing replaces, and allow-list mode starts none with networking.
   */
  readonly unavailable?: string;
}

/** The OCI runtime of a backend's sandboxes, as far as its engine tells (docs/gvisor.md). */
export interface RuntimeDescription {
  /** The runtime's name on the engine: the configured one, else the engine's default. */
  readonly name: string;
  /** Whether `docker_runtime` chose it (else it is the engine's default). */
  readonly configured: boolean;
  /** Its binary's own version line, when the engine is on this host and the binary answered. */
  readonly version?: string;
  /** The release parsed from that line (`1.1.5`, `20221219`). */
  readonly release?: string;
  /** gVisor: a kernel of its own for each sandbox. */
  readonly gvisor: boolean;
  /** The release the tests ran, when this one is older. */
  readonly olderThanTested?: string;
  /** What Berth does differently under this runtime, each keeping every guarantee, with the reason (empty: nothing). */
  readonly fallbacks: readonly string[];
}

/**
 * The sandbox backend contract (v1): what hosts, the plugin and the CLI call. A backend owns
 * one sandbox per scope: it creates it on first use, reuses it after, recreates it when it is
 * gone, and stops it when idle. Berth's own backends are `@berth/sandbox-runtime` over an engine
 * driver (`SandboxDriverV1`); a third party may implement either.
 */
export interface SandboxBackendV1 {
  readonly specificationVersion: 'v1';
  /** Short name, e.g. `docker`. */
  readonly name: string;
  readonly capabilities: BackendCapabilities;
  /**
   * Runs one command in the request's sandbox, making or restarting the sandbox first. The
   * result's stdout and stderr have every value of `request.environment.secrets` masked, unless
   * the backend was made with masking off (`docker_mask_secrets: false`). Plugin use.
   */
  doExec(request: SandboxRequest, exec: ExecRequest): Promise<ExecResult>;
  /** Every sandbox this backend owns on its engine. */
  list(): Promise<SandboxInfo[]>;
  /** Removes a scope's sandbox; with `purge`, its workspace and home too. */
  remove(scopeKey: string, options?: { purge?: boolean; paths?: SandboxPaths }): Promise<void>;
  /**
   * The engine in use (throws `EngineUnavailableError` when it does not answer); with `image`,
   * whether it is there; with `runtimeVersions: false`, perhaps without the runtimes' versions
   * and what they tell (`runtime.release`, gVisor), which only a status line may do without.
   */
  describe(options?: { image?: string; runtimeVersions?: boolean }): Promise<BackendDescription>;
  /** What the engine reports each sandbox uses, by its name (`containerName`; the driver's `usage`; absent where its engine reports none). */
  usage?(): Promise<EngineUsage>;
  /** Releases connections and timers; sandboxes keep running. */
  close(): Promise<void>;
}

/** The backend contract versions this release understands. */
export type SandboxBackend = SandboxBackendV1;

/** Throws unless `backend` implements a contract version this release knows. */
export function assertSandboxBackend(backend: unknown): asserts backend is SandboxBackend {
  const version = (backend as { specificationVersion?: unknown } | null)?.specificationVersion;
  if (version !== 'v1') throw new UnsupportedSpecificationError(`sandbox backend ${String((backend as { name?: unknown } | null)?.name)}`, version);
}
