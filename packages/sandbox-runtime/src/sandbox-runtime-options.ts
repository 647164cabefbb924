import type { HostLogger } from '@berth/core';
import type { SandboxDriverV1 } from '@berth/core/driver';
import type { EgressProxyHooks } from './egress/egress-broker.js';
import type { ProgressEvent } from './runtime-context.js';
import type { RuntimeObserver } from './runtime-observer.js';
import type { SandboxSettings } from './sandbox-settings.js';

/** Options of `createSandboxRuntime` (create-sandbox-runtime.ts). */
export interface SandboxRuntimeOptions {
  /** The engine driver (Docker, Podman, Kubernetes, or a third party's). */
  readonly driver: SandboxDriverV1;
  /** The settings (see `sandboxSettings`). */
  readonly settings: SandboxSettings;
  /** Overrides `settings.docker_image`. */
  readonly image?: string;
  /** Where Berth logs what it does; never a secret value. */
  readonly logger?: HostLogger;
  /** Progress of pulls, creates and starts, for a user waiting on a first command. */
  readonly onProgress?: (event: ProgressEvent) => void;
  /** Prefix of sandbox names; core's keyed digest of the scope follows. @default 'berth-' */
  readonly namePrefix?: string;
  /** Labels added to every sandbox, and required of every sandbox this runtime lists, adopts or reaps. */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The folder of this installation's sandboxes (`{sandbox_dir}/docker`, a request's
   * `paths.root`). When given, the runtime lists, adopts, reaps, stops and removes only the
   * sandboxes whose workspace is inside it, so two gateways on one engine never touch each
   * other's sandboxes, even those of the same user. Without it, the roots of the requests it
   * served are its own (none before the first): a backend made without it never lists, reaps or
   * stops another installation's sandboxes either, but it finds the sandboxes an earlier
   * process left only once a request of theirs came in.
   */
  readonly sandboxRoot?: string;
  /** Milliseconds between automatic reaps while `lifetime_seconds` is set; 0: only explicit `reap()`. @default a quarter of the lifetime, 1 s to 60 s */
  readonly reapIntervalMs?: number;
  /** How often the fair-share guard reads the shared bound, ms (fair-share-guard.ts); 0: never (tests). */
  readonly guardIntervalMs?: number;
  /** How many sandboxes may be created and started at once; more wait. @default 4 */
  readonly createConcurrency?: number;
  /** How long a sandbox's new shell may take to answer before it is deemed unable to hold a session. @default 10 000 */
  readonly shellReadyTimeoutMs?: number;
  /**
   * How long the first shells of a sandbox just (re)started wait for its launcher to read its
   * FIFO before they go through the engine's exec: on a busy machine a new sandbox takes a
   * while to reach it. @default 5 000
   */
  readonly firstLaunchWaitMs?: number;
  /** Where the cgroup file system is mounted, for the one bound all sandboxes share. @default /sys/fs/cgroup */
  readonly cgroupRoot?: string;
  /**
   * What the egress proxy (brokered variables, allow-list mode) trusts upstream besides the
   * host's store, and how it resolves names: for tests and embeddings. A gateway trusts a
   * company's CA through `NODE_EXTRA_CA_CERTS`, as any Node process does.
   */
  readonly egressProxy?: EgressProxyHooks;
  /**
   * Told of every command and sandbox event as the audit trail is, and given a view of the
   * runtime to read at scrape time: the metrics of `@berth/sandbox-runtime/metrics`.
   */
  readonly observer?: RuntimeObserver;
}
