import type { HostLogger } from '@berth/core';
import type { DriverDescription, SandboxDriverV1 } from '@berth/core/driver';
import { createEgressBroker, type EgressBroker, type EgressProxyHooks } from './egress/egress-broker.js';
import { createEgressFirewall, ENFORCED_BY_ENGINE, type EgressFirewall } from './egress/egress-firewall.js';
import { madeOnce, type MadeOnce } from './made-once.js';
import type { SandboxSettings } from './sandbox-settings.js';

/** The runtime's egress: its policy on the host, and the brokered variables and proxy. */
export interface RuntimeEgress {
  /** Brokered variables and the egress proxy (egress/egress-broker.ts). */
  readonly broker: EgressBroker;
  /** The egress policy (egress/egress-firewall.ts), made once the engine has said where its sandbox networks are. */
  readonly firewall: MadeOnce<EgressFirewall>;
  /** Makes sure the egress policy is in force before a sandbox with networking of the installation at `root` starts. */
  prepareNetwork(root: string): Promise<void>;
  /** Puts the installation's egress table back if it went missing since. */
  confirmNetwork(): Promise<void>;
  /** Why the egress policy is not enforced (`undefined`: enforced). */
  unenforced(): Promise<string | undefined>;
}

/**
 * The egress policy and the broker of one runtime (create-sandbox-runtime.ts): the proxy applies
 * the firewall's exceptions too, read once the first sandbox needs them.
 */
export function createRuntimeEgress(options: {
  readonly settings: SandboxSettings;
  readonly driver: SandboxDriverV1;
  /** The engine's description, without the runtimes' versions. */
  readonly describe: () => Promise<DriverDescription>;
  readonly sandboxRoot: string | undefined;
  readonly logger: HostLogger | undefined;
  readonly proxy: EgressProxyHooks | undefined;
}): RuntimeEgress {
  const { settings, driver, logger } = options;
  let firewallInForce: EgressFirewall | undefined;
  const unenforced = async (): Promise<string | undefined> => (await firewall.get()).unenforced;
  const broker = createEgressBroker({
    settings,
    driver,
    describe: options.describe,
    exceptions: () => firewallInForce?.exceptions() ?? [],
    unenforced,
    logger,
    proxy: options.proxy,
  });
  // The egress policy, once the engine has said where its sandbox networks are.
  const firewall = madeOnce(() =>
    options.describe().then((description) => {
      const chosen: EgressFirewall = description.egressEnforcedBy
        ? ENFORCED_BY_ENGINE
        : createEgressFirewall({
            pool: description.networkPool ?? settings.docker_network_pool,
            allow: settings.docker_egress_allow,
            network: settings.docker_network,
            poolNetworks: description.networkPool !== undefined,
            engine: driver.engine,
            sandboxRoot: options.sandboxRoot,
            logger,
            allowlist: settings.docker_egress === 'allowlist',
          });
      if (chosen.unenforced) logger?.warn(`berth: ${chosen.unenforced}`);
      firewallInForce = chosen;
      return chosen;
    }),
  );
  return {
    broker,
    firewall,
    async prepareNetwork(root) {
      if (!settings.docker_network) return;
      await (await firewall.get()).ensure();
      await broker.prepare(root);
    },
    async confirmNetwork() {
      if (settings.docker_network) await (await firewall.get()).confirm();
    },
    unenforced,
  };
}
