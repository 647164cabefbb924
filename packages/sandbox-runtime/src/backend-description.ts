import type { BackendDescription } from '@berth/core';
import type { DriverDescription } from '@berth/core/driver';
import { runtimeFacts } from './oci-runtime.js';
import type { SandboxSettings } from './sandbox-settings.js';
import type { SharedBound } from './lifecycle/shared-bound.js';

/** What a runtime says of itself (`describe()`): the driver's description, with the runtime's egress, bound and what it cannot enforce. */
export function backendDescription(parts: {
  readonly driver: DriverDescription;
  readonly settings: Pick<SandboxSettings, 'docker_runtime' | 'docker_egress' | 'docker_egress_domains' | 'docker_secret_hosts'>;
  readonly shared: SharedBound;
  /** Lines saying what is not enforced here (disks, egress, the bound). */
  readonly notEnforced: readonly string[];
  readonly egress: { readonly proxy: string | undefined; readonly unavailable: string | undefined };
}): BackendDescription {
  const { driver, settings, shared, egress } = parts;
  return {
    ...driver,
    runtime: runtimeFacts(driver, settings.docker_runtime),
    egress: {
      mode: settings.docker_egress,
      domains: settings.docker_egress === 'allowlist' ? [...settings.docker_egress_domains] : [],
      brokered: Object.fromEntries(Object.entries(settings.docker_secret_hosts).map(([name, hosts]) => [name, [...hosts]])),
      ...(egress.proxy ? { proxy: egress.proxy } : {}),
      ...(egress.unavailable ? { unavailable: egress.unavailable } : {}),
    },
    warnings: [...driver.warnings, ...parts.notEnforced],
    sharedBound: {
      ...(shared.parent ? { parent: shared.parent } : {}),
      memoryMb: shared.memoryMb,
      pids: shared.pids,
      enforced: shared.unenforced === undefined,
    },
  };
}
