import type { LookupFunction } from 'node:net';
import { SandboxError, type HostLogger, type SandboxRequest } from '@berth/core';
import { type DriverDescription, parseEgressDomain, type SandboxDriverV1 } from '@berth/core/driver';
import { createAddressPolicy } from './egress-proxy/address-policy.js';
import type { CertificateAuthority } from './egress-proxy/certificate-authority.js';
import type { EgressProxy } from './egress-proxy/egress-proxy.js';
import { createInstallationBundles } from './egress-proxy/installation-bundle.js';
import { createEgressAttachments } from './egress-attachments.js';
import type { EgressException } from './resolve-egress-entry.js';
import { EGRESS_PROXY_PORT, installationTag } from './egress-names.js';
import { CA_BUNDLE_TARGET, createSandboxVariables } from './sandbox-variables.js';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import type { SandboxSettings } from '../sandbox-settings.js';

// The folder of an installation's egress proxy files in its sandbox root is core's
// `EGRESS_FOLDER` (host-layout.ts, read by egress-proxy/installation-bundle.ts): like every
// `.berth-` name there, it is no scope's folder, and only the bundle is ever mounted into a sandbox.
// A sandbox finds the bundle at CA_BUNDLE_TARGET (sandbox-variables.ts).

/** What a test or an embedding gives the proxy besides the settings. */
export interface EgressProxyHooks {
  /** Certificates trusted upstream besides the host's store (`NODE_EXTRA_CA_CERTS` does it for a gateway). */
  readonly upstreamCa?: readonly string[];
  /** How the proxy resolves host names (tests point names at their own servers). */
  readonly lookup?: LookupFunction;
}

/** What the brokering needs of the rest of the runtime. */
export interface EgressBrokerOptions {
  readonly settings: SandboxSettings;
  readonly driver: SandboxDriverV1;
  readonly describe: () => Promise<DriverDescription>;
  /** The egress exceptions in force (the firewall's), which the proxy applies too. */
  readonly exceptions: () => readonly EgressException[];
  /** Why the firewall does not enforce the egress policy here, or `undefined` when it does. */
  readonly unenforced: () => Promise<string | undefined>;
  readonly logger?: HostLogger | undefined;
  readonly proxy?: EgressProxyHooks | undefined;
}

/**
 * Brokered variables and allow-list mode for one runtime (docs/brokered-secrets.md): gives each
 * sandbox placeholders instead of its brokered values and the proxy's variables, runs the egress
 * proxy on its sandboxes' network gateways, and tells the proxy which sandbox a connection is
 * from and what it may have substituted.
 */
export interface EgressBroker {
  /** Whether sandboxes use the egress proxy: a variable is brokered, or allow-list mode is on, and they have networking. */
  readonly configured: boolean;
  /** The brokered variables' names. */
  readonly brokered: readonly string[];
  /**
   * Before a sandbox with networking is made or started: refuses allow-list mode where the
   * firewall cannot hold it (a sandbox would reach everything) and writes the CA and bundle.
   */
  prepare(root: string): Promise<void>;
  /** The bundle's mount, for the sandbox's spec, when its sandboxes use the proxy. */
  mounts(root: string): Promise<Array<{ source: string; target: string; readOnly: boolean }>>;
  /** The variables a sandbox gets: its brokered ones as placeholders, and the proxy's once it is attached. */
  variables(entry: SandboxEntry, request: SandboxRequest): Readonly<Record<string, string>>;
  /** After a sandbox is acquired: learns its address and listens on its gateway. */
  attach(entry: SandboxEntry): Promise<void>;
  /** A sandbox stopped or removed: its address is no longer its. */
  detach(entry: SandboxEntry): Promise<void>;
  /** What `berth doctor` says: where the proxy runs, or why it does not. */
  status(): Promise<{ readonly proxy: string | undefined; readonly unavailable: string | undefined }>;
  close(): Promise<void>;
}

export function createEgressBroker(options: EgressBrokerOptions): EgressBroker {
  const { settings, driver, logger } = options;
  const brokered = Object.keys(settings.docker_secret_hosts).sort();
  const allowlist = settings.docker_egress === 'allowlist';
  const allow = allowlist ? settings.docker_egress_domains.map((entry) => parseEgressDomain(entry)) : undefined;
  // Brokered values never enter a sandbox, with networking or without; the proxy runs only for
  // sandboxes with networking.
  const brokering = brokered.length > 0;
  const configured = settings.docker_network && (brokering || allowlist);

  /** Why this engine's sandboxes cannot use the proxy, or `undefined` when they can. */
  let unavailable: Promise<string | undefined> | undefined;
  // The pool the engine's sandbox networks are on, as it said (the firewall's too).
  let pool = settings.docker_network_pool;
  const whyUnavailable = (): Promise<string | undefined> =>
    (unavailable ??= options
      .describe()
      .then((description) => {
        if (description.networkPool !== undefined) pool = description.networkPool;
        if (description.networkPool === undefined) {
          return (
            `${driver.engine} sandboxes here are not on networks of this host (rootless user-mode networking, a remote engine, or a cluster), so ` +
            `the proxy cannot tell them apart`
          );
        }
        if (!driver.networkAddress) return `the ${driver.engine} driver cannot say a sandbox's address`;
        return undefined;
      })
      .catch((error: unknown) => {
        unavailable = undefined;
        throw error;
      }));

  // One CA per sandbox root (a gateway has one).
  const installationOf = createInstallationBundles({
    name: (root) => `Berth egress proxy ${installationTag({ sandboxRoot: root, pool: settings.docker_network_pool })}`,
    logger,
  });

  let proxy: EgressProxy | undefined;
  // The proxy's module (TLS, HTTP, DNS: about 50 ms to load) is loaded when a sandbox first needs
  // it, so a command that never attaches one (`berth ls`, `berth doctor`) does not pay for it.
  const proxyFor = async (ca: CertificateAuthority): Promise<EgressProxy> => {
    const { createEgressProxy } = await import('./egress-proxy/egress-proxy.js');
    proxy ??= createEgressProxy({
      ca,
      clientOf: (remote, local) => attachments.clientAt(remote, local),
      allowsAddress: createAddressPolicy({ pool, exceptions: options.exceptions }),
      logger,
      ...(options.proxy?.upstreamCa ? { upstreamCa: options.proxy.upstreamCa } : {}),
      ...(options.proxy?.lookup ? { lookup: options.proxy.lookup } : {}),
    });
    return proxy;
  };

  // The variables handed to a sandbox (sandbox-variables.ts).
  const variablesOf = createSandboxVariables({ settings, driver });
  const warned = new Set<string>();
  const warnOnce = (key: string, line: string): void => {
    if (warned.has(key)) return;
    warned.add(key);
    logger?.warn(line);
  };

  // Which sandbox is at which address, and the proxy's listeners on their gateways (egress-attachments.ts).
  const attachments = createEgressAttachments({
    configured,
    driver,
    brokered,
    allow,
    whyUnavailable,
    installationOf,
    proxyFor,
    proxy: () => proxy,
    warnOnce,
  });

  return {
    configured,
    brokered,

    async prepare(root) {
      if (!configured) return;
      installationOf(root);
      if (!allowlist) return;
      const why = (await whyUnavailable()) ?? (await options.unenforced());
      if (why) {
        throw new SandboxError(
          'EGRESS_ALLOWLIST_UNENFORCED',
          `terminal.docker_egress is allowlist, but it cannot be enforced here: ${why.replace(/^the egress policy is not enforced: /, '')}; no ` +
            `sandbox starts with networking — set terminal.docker_network: false, or docker_egress: open`,
        );
      }
    },

    async mounts(root) {
      if (!configured || !driver.capabilities.hostFolders || (await whyUnavailable()) !== undefined) return [];
      return [{ source: installationOf(root).bundle, target: CA_BUNDLE_TARGET, readOnly: true }];
    },

    variables(entry, request) {
      if (!configured && !brokering) return request.environment.variables;
      attachments.retryListen(entry);
      // The proxy's table of this sandbox (none without networking: nothing could ask it).
      const client = configured ? attachments.clientOf(entry) : undefined;
      return variablesOf(entry, request, { gateway: attachments.gatewayOf(entry), client });
    },

    attach: (entry) => attachments.attach(entry),

    detach: (entry) => attachments.detach(entry),

    async status() {
      if (!configured) return { proxy: undefined, unavailable: undefined };
      const why = await whyUnavailable();
      if (why) return { proxy: undefined, unavailable: why };
      const listening = proxy?.listening() ?? [];
      const failed = attachments.notListening().map((entry) => `${entry.gateway} (${entry.code})`);
      // "could not listen on" is what berth doctor's secrets line looks for (doctor-secrets.ts).
      const failures =
        failed.length === 0
          ? ''
          : `; could not listen on ${[...new Set(failed)].join(', ')}, tried again on each of those sandboxes' next command — is another Berth ` +
            `process of this installation serving them?`;
      return {
        proxy: `port ${EGRESS_PROXY_PORT} on each sandbox network's gateway (${listening.length} listening in this process)${failures}`,
        unavailable: undefined,
      };
    },

    async close() {
      attachments.clear();
      await proxy?.close();
      proxy = undefined;
    },
  };
}
