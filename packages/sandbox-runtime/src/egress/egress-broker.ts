import type { LookupFunction } from 'node:net';
import { SandboxError, type HostLogger, type SandboxRequest } from '@berth/core';
import { type DriverDescription, type EgressDomain, loadInstallationKey, parseEgressDomain, parseHostPattern, type SandboxDriverV1 } from '@berth/core/driver';
import { createAddressPolicy } from './egress-proxy/address-policy.js';
import type { CertificateAuthority } from './egress-proxy/certificate-authority.js';
import type { EgressProxy, ProxyClient } from './egress-proxy/egress-proxy.js';
import { createInstallationBundles } from './egress-proxy/installation-bundle.js';
import { placeholderFor, type BrokeredValue } from './egress-proxy/placeholders.js';
import type { EgressException } from './resolve-egress-entry.js';
import { EGRESS_PROXY_PORT, installationTag } from './egress-names.js';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import type { SandboxSettings } from '../sandbox-settings.js';

// The folder of an installation's egress proxy files in its sandbox root is core's
// `EGRESS_FOLDER` (host-layout.ts, read by egress-proxy/installation-bundle.ts): like every
// `.berth-` name there, it is no scope's folder, and only the bundle is ever mounted into a sandbox.
/** Where a sandbox finds the bundle (mounted read-only). */
const CA_BUNDLE_TARGET = '/etc/berth/ca-bundle.pem';

/** The variables that point a sandbox's tools at the proxy and at the bundle. */
const CA_VARIABLES = ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'] as const;
const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'] as const;
const NO_PROXY_VARIABLES = ['NO_PROXY', 'no_proxy'] as const;
/** How soon a listen that failed is tried again, at the earliest (on the sandbox's next command after it). */
const LISTEN_RETRY_MS = 1_000;
/** What never goes through the proxy: the sandbox itself. */
const NO_PROXY = 'localhost,127.0.0.1,::1';

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

const stripMapped = (address: string): string => (address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address);

export function createEgressBroker(options: EgressBrokerOptions): EgressBroker {
  const { settings, driver, logger } = options;
  const brokered = Object.keys(settings.docker_secret_hosts).sort();
  // Where each brokered variable's value goes: its hosts, and the headers, query parameters and ports the operator named.
  const placesOf = new Map<string, Omit<BrokeredValue, 'variable' | 'value'>>(
    Object.entries(settings.docker_secret_hosts).map(([name, hosts]) => [
      name,
      { hosts: [...hosts].map((host) => parseHostPattern(host)), headers: hosts.headers, query: hosts.query, ports: hosts.ports },
    ]),
  );
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

  // The sandboxes attached: by address, and each entry's address.
  const byAddress = new Map<string, { entry: SandboxEntry; containerId: string; gateway: string }>();
  const addressOf = new Map<SandboxEntry, string>();
  const clients = new Map<
    SandboxEntry,
    { sandbox: string; placeholders: Map<string, BrokeredValue>; allow: readonly EgressDomain[] | undefined; ca: CertificateAuthority | undefined }
  >();
  const clientOf = (entry: SandboxEntry) => {
    let client = clients.get(entry);
    if (!client) {
      // Its CA is set when it is attached (a sandbox without networking has none).
      client = { sandbox: entry.name, placeholders: new Map(), allow, ca: undefined };
      clients.set(entry, client);
    }
    return client;
  };

  let proxy: EgressProxy | undefined;
  // The proxy's module (TLS, HTTP, DNS: about 50 ms to load) is loaded when a sandbox first needs
  // it, so a command that never attaches one (`berth ls`, `berth doctor`) does not pay for it.
  const proxyFor = async (ca: CertificateAuthority): Promise<EgressProxy> => {
    const { createEgressProxy } = await import('./egress-proxy/egress-proxy.js');
    proxy ??= createEgressProxy({
      ca,
      clientOf: (remote, local): ProxyClient | undefined => {
        const record = byAddress.get(stripMapped(remote));
        // Its own gateway only, and only while the sandbox at that address is the one attached.
        if (!record || stripMapped(local) !== record.gateway) return undefined;
        if (record.entry.containerId !== record.containerId || !record.entry.running) return undefined;
        return clientOf(record.entry);
      },
      allowsAddress: createAddressPolicy({ pool, exceptions: options.exceptions }),
      logger,
      ...(options.proxy?.upstreamCa ? { upstreamCa: options.proxy.upstreamCa } : {}),
      ...(options.proxy?.lookup ? { lookup: options.proxy.lookup } : {}),
    });
    return proxy;
  };

  // The variables handed to a sandbox, per request and attachment: the same object for the same
  // request, so the shell's digest of it is made once.
  const made = new WeakMap<SandboxRequest, { key: string; variables: Readonly<Record<string, string>>; placeholders: Map<string, BrokeredValue> }>();
  const warned = new Set<string>();
  const warnOnce = (key: string, line: string): void => {
    if (warned.has(key)) return;
    warned.add(key);
    logger?.warn(line);
  };

  // Sandboxes whose gateway the proxy could not listen on (another process held it): each is
  // tried again on its next command (variables() is asked for every one), and berth doctor says so.
  const notListening = new Map<SandboxEntry, { gateway: string; code: string; triedAt: number }>();
  const retrying = new WeakSet<SandboxEntry>();
  const retryListen = (entry: SandboxEntry): void => {
    const failed = notListening.get(entry);
    if (!failed || retrying.has(entry) || Date.now() - failed.triedAt < LISTEN_RETRY_MS) return;
    retrying.add(entry);
    void attachNow(entry)
      .catch(() => undefined)
      .finally(() => retrying.delete(entry));
  };

  const detach = async (entry: SandboxEntry): Promise<void> => {
    notListening.delete(entry);
    const address = addressOf.get(entry);
    addressOf.delete(entry);
    // Made again, with the placeholders of the next command, when the sandbox is attached again.
    clients.delete(entry);
    if (address === undefined) return;
    const record = byAddress.get(address);
    if (record?.entry !== entry) return;
    byAddress.delete(address);
    // Each sandbox network has its own gateway: no other sandbox listens there.
    if (![...byAddress.values()].some((other) => other.gateway === record.gateway)) await proxy?.unlisten(record.gateway);
  };

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
      retryListen(entry);
      const address = addressOf.get(entry);
      const gateway = address === undefined ? undefined : byAddress.get(address)?.gateway;
      const key = `${entry.name}\0${gateway ?? ''}`;
      const cached = made.get(request);
      // The proxy's table of this sandbox (none without networking: nothing could ask it).
      const client = configured ? clientOf(entry) : undefined;
      if (cached?.key === key) {
        if (client) client.placeholders = cached.placeholders;
        return cached.variables;
      }
      const variables: Record<string, string> = { ...request.environment.variables };
      // Core keeps the key per root; a sandbox without networking needs no CA.
      const installationKey = loadInstallationKey(request.paths.root);
      const placeholders = new Map<string, BrokeredValue>();
      for (const detail of request.environment.details) {
        const places = placesOf.get(detail.name);
        // Only secrets are brokered: the config refuses brokering a docker_env name.
        if (!places || !detail.secret) continue;
        const placeholder = placeholderFor(installationKey, entry.name, detail.name);
        variables[detail.name] = placeholder;
        placeholders.set(placeholder, { variable: detail.name, value: detail.value, ...places });
      }
      if (client) client.placeholders = placeholders;
      if (gateway !== undefined) {
        for (const name of PROXY_VARIABLES) variables[name] = `http://${gateway}:${EGRESS_PROXY_PORT}`;
        for (const name of NO_PROXY_VARIABLES) variables[name] = NO_PROXY;
        // Node's own fetch and http honour the proxy variables only when told (Node 24).
        variables.NODE_USE_ENV_PROXY = '1';
        if (driver.capabilities.hostFolders) for (const name of CA_VARIABLES) variables[name] = CA_BUNDLE_TARGET;
      }
      const frozen = Object.freeze(variables);
      made.set(request, { key, variables: frozen, placeholders });
      return frozen;
    },

    attach: (entry) => attachNow(entry),

    detach,

    async status() {
      if (!configured) return { proxy: undefined, unavailable: undefined };
      const why = await whyUnavailable();
      if (why) return { proxy: undefined, unavailable: why };
      const listening = proxy?.listening() ?? [];
      const failed = [...notListening.values()].map((entry) => `${entry.gateway} (${entry.code})`);
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
      byAddress.clear();
      addressOf.clear();
      notListening.clear();
      await proxy?.close();
      proxy = undefined;
    },
  };

  async function attachNow(entry: SandboxEntry): Promise<void> {
    if (!configured || !entry.containerId || !entry.paths) return;
    const why = await whyUnavailable();
    if (why) {
      warnOnce(
        'unavailable',
        `berth: no egress proxy for ${driver.engine} sandboxes: ${why}; brokered variables (${brokered.join(', ') || 'none'}) reach them as ` +
          `placeholders nothing replaces`,
      );
      return;
    }
    const found = await driver.networkAddress!(entry.containerId);
    const current = addressOf.get(entry);
    const record = current === undefined ? undefined : byAddress.get(current);
    // The same sandbox at the same address (a new shell in it): its listener stays, so a
    // request a background job makes meanwhile is not refused.
    if (found && record && current === found.address && record.gateway === found.gateway && record.containerId === entry.containerId) return;
    await detach(entry);
    if (!found) {
      warnOnce(
        `no-address ${entry.name}`,
        `berth: sandbox ${entry.name} has no network of its own; it cannot use the egress proxy (its brokered variables stay placeholders)`,
      );
      return;
    }
    const installation = installationOf(entry.paths.root);
    try {
      await (await proxyFor(installation.ca)).listen(EGRESS_PROXY_PORT, found.gateway);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      notListening.set(entry, { gateway: found.gateway, code, triedAt: Date.now() });
      warnOnce(
        `listen ${found.gateway}`,
        `berth: the egress proxy cannot listen on ${found.gateway}:${EGRESS_PROXY_PORT} (${code}); sandbox ${entry.name} goes without it for now ` +
          `(its brokered variables stay placeholders; tried again on its next command) — is another Berth process of this installation serving it?`,
      );
      return;
    }
    // A sandbox that had this address before (its network was removed and the subnet reused) is no longer there.
    const previous = byAddress.get(found.address);
    if (previous && previous.entry !== entry) addressOf.delete(previous.entry);
    byAddress.set(found.address, { entry, containerId: entry.containerId, gateway: found.gateway });
    addressOf.set(entry, found.address);
    const client = clientOf(entry);
    client.sandbox = entry.name;
    client.ca = installation.ca;
  }
}
