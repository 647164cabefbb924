import type { AuditTrail } from './audit/audit-trail.js';
import type { RuntimeObserver } from './runtime-observer.js';
import type { EgressBroker } from './egress/egress-broker.js';
import type { SharedBound } from './lifecycle/shared-bound.js';
import type { HostLogger, RuntimeDescription, SandboxPaths } from '@berth/core';
import type { SandboxDriverV1 } from '@berth/core/driver';
import type { Limiter, SandboxEntry } from './lifecycle/sandbox-entry.js';
import type { SandboxSettings } from './sandbox-settings.js';
import type { ScopeDisks } from './disks/scope-disks.js';

/** Progress of the slow steps of a first command. */
export interface ProgressEvent {
  readonly phase: 'pull' | 'create' | 'start';
  readonly message: string;
}

/** What every part of one runtime shares: the driver, the settings, and the sandboxes it knows. */
export interface RuntimeContext {
  readonly driver: SandboxDriverV1;
  readonly settings: SandboxSettings;
  /** `settings.docker_image`, unless the runtime was given another. */
  readonly image: string;
  /** Prefix of sandbox names. */
  readonly namePrefix: string;
  /** Labels on every sandbox, required of every sandbox the runtime lists, adopts or reaps. */
  readonly extraLabels: Readonly<Record<string, string>>;
  /** The folder of this installation's sandboxes: only those whose workspace is inside it are the runtime's. */
  readonly sandboxRoot?: string;
  /**
   * The sandbox roots whose sandboxes are the runtime's to list, adopt, reap, stop or remove:
   * `sandboxRoot` when given, else the roots of the requests it served (`paths.root`), none
   * before its first request, so that it touches no sandbox it did not make.
   */
  readonly servedRoots: Set<string>;
  readonly logger: HostLogger | undefined;
  readonly onProgress: ((event: ProgressEvent) => void) | undefined;
  /** Scope key → entry. */
  readonly entries: Map<string, SandboxEntry>;
  /** How long the first shells of a sandbox (re)started wait for its launcher to read its FIFO. */
  readonly firstLaunchWaitMs: number;
  /** How long a sandbox's new shell may take to answer (shell-session.ts). */
  readonly shellReadyTimeoutMs: number;
  /** Bounds the creates and starts that run at once. */
  readonly limitCreate: Limiter;
  /** Each scope's disk (`container_disk`). */
  readonly disks: ScopeDisks;
  /**
   * Runs `task` holding the scope's lock (scope-lock.ts), which every Berth process honours,
   * when the driver has host folders; refuses at once while the scope is being purged.
   */
  readonly holdScope: <T>(paths: SandboxPaths, purpose: string, task: () => Promise<T>) => Promise<T>;
  /** Makes sure the egress policy is in force before a sandbox with networking of the installation at `root` starts. */
  readonly prepareNetwork: (root: string) => Promise<void>;
  /** Puts the installation's egress table back if it went missing since; asked once a new sandbox's network exists, before it starts. */
  readonly confirmNetwork: () => Promise<void>;
  /** Brokered variables and the egress proxy (egress-broker.ts). */
  readonly egress: EgressBroker;
  /** Why the egress policy is not enforced, once the engine said (`undefined`: enforced, or not known yet). */
  readonly egressUnenforced: () => Promise<string | undefined>;
  /** The one bound all sandboxes share (shared-bound.ts), set once before the first sandbox is made. */
  readonly sharedBound: () => Promise<SharedBound>;
  /** The audit trail (`terminal.audit_file`): one line per command and per sandbox event. */
  readonly audit: AuditTrail;
  /** Told of every command and sandbox event: the audit trail and the runtime's other observers (metrics). */
  readonly observer: RuntimeObserver;
  /** The OCI runtime of the sandboxes (oci-runtime.ts), once the engine said; `undefined` while it cannot. */
  readonly ociRuntime: () => Promise<RuntimeDescription | undefined>;
}

/** The error's message, for a log line. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
