// The driver contract (`SandboxDriverV1` and its parts), and `@berth/core/driver`: this module is
// also the entry of what only drivers and the sandbox runtime use — the host layout's inner names,
// the installation key and the sandbox names made with it, egress entries, the default network
// pool, the masking bound.
// Hosts, plugins and platform adapters import `@berth/core`.
import { UnsupportedSpecificationError } from './errors.js';

/**
 * One process running in a sandbox with its standard streams, as an engine's exec API gives
 * it: what the persistent shell and the kill shell are built on.
 */
export interface ExecChannel {
  /** Writes to the process's stdin. */
  write(data: string | Uint8Array): void;
  /** Closes the process's stdin (the process sees end of file). */
  end(): void;
  /** Drops the connection; the engine then ends the process's stdin too. */
  destroy(): void;
  onStdout(listener: (chunk: Buffer) => void): void;
  onStderr(listener: (chunk: Buffer) => void): void;
  /** Called once when the connection ends, whoever ended it. */
  onClose(listener: () => void): void;
  /** The process's exit code once it ended, when the engine reports it. */
  exitCode(): Promise<number | undefined>;
}

/** Starts a process inside a sandbox and returns its channel. */
export type OpenExecChannel = (command: readonly string[], options?: { workingDir?: string }) => Promise<ExecChannel>;

/** A process's id, its parent's and its process group's (the engine's or the sandbox's numbering, one for all three). */
export interface ProcessIds {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
}

/**
 * The processes of a running sandbox as its driver lists them, for the runtime's one decision of
 * whether the sandbox is busy (the driver decides nothing: which processes are idle is the
 * runtime's, read from the shape of its own launcher).
 */
export interface DriverProcessList {
  /**
   * Each process's command line, its arguments joined by spaces, as the engine lists them (a
   * sandbox that is not running lists none). Absent when the engine cannot see the sandbox's
   * processes (a Kubernetes pod; gVisor, whose processes live in its own kernel): the runtime
   * then lists them from inside, through `openChannel`.
   */
  readonly commands?: readonly string[];
  /**
   * Each process's id, its parent's and its process group's, in the order of `commands` (ids as
   * the engine lists them; a parent that is no process of the sandbox, such as the engine's shim,
   * is any number not among the ids). Optional: with it the runtime tells a user's forked shell or
   * sleep from the sandbox's own (a `(sleep 3600; …) &` job is work); without it, by command lines.
   */
  readonly ids?: readonly ProcessIds[];
  /** The engine's own processes in a sandbox, which are never the user's work (an init it runs the main process under, a pod's pause). */
  readonly engineProcess?: RegExp;
}

/** A sandbox (container, pod) as its engine reports it. */
export interface DriverSandbox {
  /** The engine's id for it. */
  readonly id: string;
  /** Its name (Berth's opaque `berth-…`). */
  readonly name: string;
  readonly state: 'running' | 'stopped' | 'paused' | 'other';
  /** Its labels, exactly as created. */
  readonly labels: Readonly<Record<string, string>>;
}

/**
 * What one sandbox is, engine-neutral: the runtime builds it from the settings and the request,
 * a driver translates it to its engine. It never holds a variable's value: variables travel
 * over the exec stream.
 */
export interface SandboxSpec {
  readonly name: string;
  readonly image: string;
  /** The same for every sandbox. */
  readonly hostname: string;
  /** Ownership labels and the spec's digest. */
  readonly labels: Readonly<Record<string, string>>;
  /** The scope's host folder mounted read-write at `/workspace` (drivers with host folders). */
  readonly workspace: string;
  /** The scope's host folder mounted read-write at `/root` (drivers with host folders). */
  readonly home: string;
  /** The operator's extra bind mounts (`docker_volumes`). */
  readonly volumes: ReadonlyArray<{ readonly source: string; readonly target: string; readonly readOnly: boolean }>;
  /**
   * The scope's channel folder, mounted read-only at `/run/berth` (drivers with host folders): the
   * FIFOs through which the main process starts the runtime's shells without an engine exec.
   * Absent: every shell is an engine exec.
   */
  readonly channels?: string;
  /** The main process: a shell that waits and leaves at once on TERM. */
  readonly command: readonly string[];
  readonly workingDir: string;
  readonly limits: {
    readonly cpus: number;
    readonly memoryMb: number;
    readonly pids: number;
    readonly nofile: number;
    readonly nproc: number;
    /** Size of the `/tmp` tmpfs (and, with a read-only root, of `/var/tmp`). */
    readonly tmpMb: number;
    /**
     * The hard limit on the workspace and home together (`container_disk`), 0 for none. The
     * runtime enforces it for drivers with host folders (a disk per scope); a driver without
     * them sizes its storage with it (a claim's size).
     */
    readonly diskMb: number;
    /**
     * The parent cgroup the sandbox lives under (the engine's `--cgroup-parent`): the one bound
     * all of an installation's sandboxes share. Absent: the engine's default.
     */
    readonly cgroupParent?: string;
  };
  readonly security: {
    /** The capabilities kept after dropping all. */
    readonly capabilities: readonly string[];
    readonly noNewPrivileges: boolean;
    readonly readOnlyRoot: boolean;
    /** An OCI runtime to use instead of the engine's default. */
    readonly runtime?: string;
  };
  /** Whether the sandbox has a network (of its own, where the engine can) or none at all. */
  readonly network: boolean;
  /** Seconds a stop waits before killing. */
  readonly stopGraceSeconds: number;
}

/** Engine facts for `berth doctor`. */
export interface DriverDescription {
  /** `docker`, `podman`, `kubernetes`, … */
  readonly engine: string;
  /** The socket path or URL in use. */
  readonly endpoint: string;
  /** How the endpoint was found, e.g. `$DOCKER_HOST` or `default socket /var/run/docker.sock`. */
  readonly discovery: string;
  readonly version: string;
  readonly apiVersion: string;
  /** What the operator should know about this engine (limits it cannot apply, say). */
  readonly warnings: readonly string[];
  /** The OCI runtimes the engine can run containers with (`runc`, `runsc`, …), when it says. */
  readonly runtimes?: readonly string[];
  /** The runtime of a container that names none, when the engine says. */
  readonly defaultRuntime?: string;
  /**
   * What each runtime's binary says it is (the first line of its `--version`: `runc version
   * 1.1.5+ds1`, `runsc version 0.0~20221219.0`), for the runtimes whose binary is on this host
   * and answered: what tells a gVisor sandbox from the others, and its release from the one the
   * tests ran.
   */
  readonly runtimeVersions?: Readonly<Record<string, string>>;
  /** The engine host's size, when it says: what the sandboxes' limits must fit in. */
  readonly host?: { readonly memoryMb: number; readonly cpus: number };
  /**
   * The IPv4 range every sandbox network is taken from, when those networks are bridges on the
   * gateway's own host (a local engine, rootful): the runtime then enforces the egress policy
   * there. Absent when it cannot (rootless user-mode networking, a remote engine).
   */
  readonly networkPool?: string;
  /**
   * How the engine places containers in cgroups, when its cgroups are the gateway's host's own
   * (a local, rootful engine): the runtime then bounds all sandboxes together under one parent.
   */
  readonly cgroups?: { readonly manager: 'cgroupfs' | 'systemd'; readonly version: 1 | 2 };
  /**
   * How the driver enforces the egress policy itself, when it does (a Kubernetes NetworkPolicy,
   * say); the runtime then installs no host rules and warns of nothing.
   */
  readonly egressEnforcedBy?: string;
}

/** What a driver can do; the runtime reads these to decide what it does around the driver. */
export interface DriverCapabilities {
  /** Sandboxes of different scopes cannot reach each other over the network. */
  readonly networkIsolation: boolean;
  /**
   * The workspace and home are host folders (bind mounts): the runtime creates them owner-only,
   * refuses links, records each sandbox's last use beside them and purges them.
   */
  readonly hostFolders: boolean;
  /**
   * `listProcesses()` lists a running sandbox's processes, so the runtime can tell a sandbox
   * running commands from an idle one; false: the runtime never asks, a sandbox counts as busy
   * (a config change waits for a restart) and is stopped by its last use alone.
   */
  readonly processList: boolean;
  /** `network: false` leaves the sandbox only loopback (absent: true). */
  readonly networkNone?: boolean;
}

/**
 * The driver port (v1): the few engine operations the sandbox runtime builds every policy on —
 * queueing, adoption, recreation, idle and least-recently-used stopping, retries, the shell
 * sessions, masking. A driver normalises its engine's answers to core's errors in one place:
 * `EngineUnavailableError` (the engine does not answer), `ImageNotFoundError`, and
 * `SandboxError` with code `SANDBOX_GONE` (no such sandbox, or not running any more),
 * `SANDBOX_CONFLICT` (a name taken, a removal in progress) or `ENGINE_ERROR`.
 */
/**
 * What the engine itself reports each sandbox uses now, where the gateway's host cannot read its
 * cgroups (a cluster's metrics API); or one line saying what is missing.
 */
export type EngineUsage =
  | { readonly sandboxes: ReadonlyMap<string, { readonly cpuCores: number; readonly memoryBytes: number }> }
  | { readonly missing: string };

export interface SandboxDriverV1 {
  readonly specificationVersion: 'v1';
  /** The engine's name, e.g. `docker`; in labels and messages. */
  readonly engine: string;
  readonly capabilities: DriverCapabilities;
  /**
   * A tag of how this driver maps a spec to its engine; part of the digest that tells a
   * sandbox's settings changed, so a driver that maps differently recreates its sandboxes.
   */
  readonly specRevision: string;
  /** Throws `EngineUnavailableError` naming the endpoint when the engine does not answer. */
  ping(): Promise<void>;
  /**
   * With `runtimeVersions: false` the caller needs no `runtimeVersions` (a status line: `berth
   * ls`), so a driver need not ask each runtime's binary (a process each); it may give them anyway.
   */
  describe(options?: { readonly runtimeVersions?: boolean }): Promise<DriverDescription>;
  /** Whether the image is on the engine (never pulls). */
  hasImage(image: string): Promise<boolean>;
  /** Makes sure the image is present, pulling it with progress; `ImageNotFoundError` naming it when it cannot. */
  prepareImage(image: string, onProgress?: (message: string) => void): Promise<void>;
  /** The sandbox of that name or id, or `undefined` when there is none. */
  inspect(nameOrId: string): Promise<DriverSandbox | undefined>;
  /** Every sandbox carrying all these labels. */
  list(labels: Readonly<Record<string, string>>): Promise<DriverSandbox[]>;
  /**
   * Makes what the engine keeps for the sandbox apart from its container (its network), so that
   * the runtime can do it while it prepares the host's folders. Optional: `create()` still makes
   * whatever is missing.
   */
  prepare?(spec: SandboxSpec): Promise<void>;
  /** Creates the sandbox (its network too) without starting it; `undefined` when another process holds the name. */
  create(spec: SandboxSpec): Promise<string | undefined>;
  /**
   * Starts it; a running sandbox is fine. `justCreated`: `create()` made it a moment ago, so what
   * a stopped sandbox may have lost since (its network) need not be looked for.
   */
  start(id: string, options?: { readonly justCreated?: boolean }): Promise<void>;
  /** Stops it within `graceSeconds`; a stopped or removed sandbox is fine. */
  stop(id: string, graceSeconds: number): Promise<void>;
  unpause(id: string): Promise<void>;
  /**
   * Freezes every process of the running sandbox (the cgroup freezer: `docker pause`); its memory
   * stays, `unpause` thaws it. Optional: where it is absent, idle sandboxes are stopped.
   */
  pause?(id: string): Promise<void>;
  /** Removes it with its own network; a removed one is fine. */
  remove(id: string): Promise<void>;
  /** Renames it (adopting a sandbox an earlier release named otherwise). */
  rename(id: string, name: string): Promise<void>;
  /**
   * The processes of the running sandbox (see {@link DriverProcessList}); whether it is busy is the
   * runtime's decision, and what this throws counts as busy there. Called only when
   * `capabilities.processList` is true. (Replaces `isBusy`, which each driver decided itself.)
   */
  listProcesses(id: string): Promise<DriverProcessList>;
  /**
   * The sandbox's address on its own network and that network's gateway, an address of the
   * engine's host, when the sandbox runs on a network of its own that is a bridge on the
   * gateway's host (`DriverDescription.networkPool` set); `undefined` otherwise. The egress proxy
   * listens on the gateway and knows the sandbox by the address. Optional: without it, brokered
   * variables reach sandboxes as placeholders that nothing substitutes.
   */
  networkAddress?(id: string): Promise<{ readonly address: string; readonly gateway: string } | undefined>;
  /** Starts a process in it with stdin open and no terminal; no variables (they go over stdin). */
  openChannel(id: string, command: readonly string[], options?: { workingDir?: string }): Promise<ExecChannel>;
  /**
   * Every sandbox's CPU (cores, averaged over the engine's last window) and memory, by the
   * sandbox's name, in one call for all (`berth top`). Optional: a local engine's usage is read
   * from its cgroups instead.
   */
  usage?(): Promise<EngineUsage>;
  /** Deletes a removed scope's storage, for a driver without host folders (a claim, a volume). */
  purgeStorage?(scopeKey: string): Promise<void>;
  /** Called before the runtime deletes a removed sandbox's host folders (rootless Podman gives write permission back). */
  beforePurge?(folder: { readonly root: string; readonly folder: string; readonly workspace: string; readonly home: string }): Promise<void>;
  /** Releases connections; sandboxes keep running. */
  close?(): Promise<void>;
}

/** The driver contract versions this release understands. */
export type SandboxDriver = SandboxDriverV1;

/**
 * Throws unless `driver` implements a driver contract version this release knows — a v1 driver
 * made before `listProcesses` replaced `isBusy` included, with a `TypeError` saying what to change.
 */
export function assertSandboxDriver(driver: unknown): asserts driver is SandboxDriver {
  const given = driver as { specificationVersion?: unknown; engine?: unknown; capabilities?: { processList?: unknown }; listProcesses?: unknown } | null;
  const version = given?.specificationVersion;
  if (version !== 'v1') throw new UnsupportedSpecificationError(`sandbox driver ${String(given?.engine)}`, version);
  if (given?.capabilities?.processList === true && typeof given.listProcesses !== 'function') {
    throw new TypeError(
      `sandbox driver ${String(given.engine)} declares capabilities.processList but has no listProcesses(id); ` +
        "SandboxDriverV1's isBusy(id) became listProcesses(id), which lists the sandbox's processes for the runtime to decide (docs/sandbox-runtime.md)",
    );
  }
}

// What drivers and the runtime use besides the contract: `@berth/core/driver` only.
export { BOUND_HOLDERS_FOLDER, CHANNELS_FOLDER, disksFolderOf, EGRESS_FOLDER, LAST_USED_FILE, POOL_FOLDER, POOL_SLOT_PREFIX } from './host-layout.js';
export { hasInstallationKey, loadInstallationKey, readInstallationKey, sandboxName } from './sandbox-name.js';
export { cidrWithin, isHostNameEntry, LINK_LOCAL_RANGE, splitEgressEntry } from './egress-exception.js';
export {
  canonicalHost,
  DEFAULT_EGRESS_PORTS,
  egressDomainMatches,
  formatHostPattern,
  hostMatches,
  parseEgressDomain,
  parseHostPattern,
  type EgressDomain,
  type HostPattern,
} from './host-pattern.js';
export { CREDENTIAL_HEADERS, type BrokeredHosts } from './brokered-hosts.js';
export { MIN_SECRET_LENGTH } from './redact.js';
export { DEFAULT_NETWORK_POOL } from './terminal-config-schema.js';
export { base64Runs } from './secret-forms.js';
