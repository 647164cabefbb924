import type { EgressDomain, SandboxDriverV1 } from '@berth/core/driver';
import type { CertificateAuthority } from './egress-proxy/certificate-authority.js';
import type { EgressProxy, ProxyClient } from './egress-proxy/egress-proxy.js';
import type { BrokeredValue } from './egress-proxy/placeholders.js';
import { EGRESS_PROXY_PORT } from './egress-names.js';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';

/** How soon a listen that failed is tried again, at the earliest (on the sandbox's next command after it). */
const LISTEN_RETRY_MS = 1_000;

const stripMapped = (address: string): string => (address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address);

/** The proxy's table of one sandbox: its name, its brokered values by placeholder, its allow list and CA. */
export interface BrokerClient {
  sandbox: string;
  placeholders: Map<string, BrokeredValue>;
  allow: readonly EgressDomain[] | undefined;
  ca: CertificateAuthority | undefined;
}

/** Which sandbox is at which address, and where the proxy listens for it. */
export interface EgressAttachments {
  /** After a sandbox is acquired: learns its address and listens on its gateway. */
  attach(entry: SandboxEntry): Promise<void>;
  /** A sandbox stopped or removed: its address is no longer its. */
  detach(entry: SandboxEntry): Promise<void>;
  /** Tries again, in the background, a listen that failed for the sandbox (at most once a second). */
  retryListen(entry: SandboxEntry): void;
  /** The gateway of the sandbox's network, once it is attached. */
  gatewayOf(entry: SandboxEntry): string | undefined;
  /** The proxy's table of a sandbox, made on first use. */
  clientOf(entry: SandboxEntry): BrokerClient;
  /** The sandbox a connection comes from, by its remote and local addresses; undefined refuses it. */
  clientAt(remote: string, local: string): ProxyClient | undefined;
  /** The gateways the proxy could not listen on, and why. */
  notListening(): Array<{ readonly gateway: string; readonly code: string }>;
  /** Forgets every address: the broker is closing. */
  clear(): void;
}

/** The attachments of one broker (egress-broker.ts), which gives what the proxy and the warnings need. */
export function createEgressAttachments(options: {
  readonly configured: boolean;
  readonly driver: SandboxDriverV1;
  readonly brokered: readonly string[];
  /** Allow-list mode's domains, undefined when off. */
  readonly allow: readonly EgressDomain[] | undefined;
  readonly whyUnavailable: () => Promise<string | undefined>;
  readonly installationOf: (root: string) => { readonly ca: CertificateAuthority };
  /** The proxy, made when first needed. */
  readonly proxyFor: (ca: CertificateAuthority) => Promise<EgressProxy>;
  /** The proxy, if it was made. */
  readonly proxy: () => EgressProxy | undefined;
  readonly warnOnce: (key: string, line: string) => void;
}): EgressAttachments {
  const { configured, driver, brokered, allow, whyUnavailable, installationOf, proxyFor, warnOnce } = options;
  // The sandboxes attached: by address, and each entry's address.
  const byAddress = new Map<string, { entry: SandboxEntry; containerId: string; gateway: string }>();
  const addressOf = new Map<SandboxEntry, string>();
  // The proxy's table of each sandbox.
  const clients = new Map<SandboxEntry, BrokerClient>();
  const clientOf = (entry: SandboxEntry): BrokerClient => {
    let client = clients.get(entry);
    if (!client) {
      // Its CA is set when it is attached (a sandbox without networking has none).
      client = { sandbox: entry.name, placeholders: new Map(), allow, ca: undefined };
      clients.set(entry, client);
    }
    return client;
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
    if (![...byAddress.values()].some((other) => other.gateway === record.gateway)) await options.proxy()?.unlisten(record.gateway);
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

  return {
    attach: (entry) => attachNow(entry),
    detach,
    retryListen,
    gatewayOf(entry) {
      const address = addressOf.get(entry);
      return address === undefined ? undefined : byAddress.get(address)?.gateway;
    },
    clientOf,
    clientAt(remote, local) {
      const record = byAddress.get(stripMapped(remote));
      // Its own gateway only, and only while the sandbox at that address is the one attached.
      if (!record || stripMapped(local) !== record.gateway) return undefined;
      if (record.entry.containerId !== record.containerId || !record.entry.running) return undefined;
      return clientOf(record.entry);
    },
    notListening: () => [...notListening.values()],
    clear() {
      byAddress.clear();
      addressOf.clear();
      notListening.clear();
    },
  };
}
