import type { BackendDescription, HostLogger, RuntimeDescription, SandboxBackendV1 } from '@berth/core';
import type { DriverDescription, SandboxDriverV1 } from '@berth/core/driver';
import { backendDescription } from './backend-description.js';
import type { EgressBroker } from './egress/egress-broker.js';
import { existingInstallationTag, installationTag } from './egress/egress-names.js';
import { prepareSharedBound, type SharedBound } from './lifecycle/shared-bound.js';
import { boundDrift } from './lifecycle/bound-keeper.js';
import { madeOnce, type MadeOnce } from './made-once.js';
import { runtimeFacts } from './oci-runtime.js';
import type { SandboxSettings } from './sandbox-settings.js';

export const BRIEFLY = { runtimeVersions: false } as const; // describe(): only runtimeFacts needs the runtimes' versions (a process each)

/** What depends on the engine's description, made once and asked again after a failure; and the backend's description. */
export interface RuntimeDescriptions {
  /** The one bound all sandboxes share, written before the first sandbox starts. */
  readonly bound: MadeOnce<SharedBound>;
  /** Makes the bound again as it was first made (it was found gone or changed), and says what it made. */
  readonly remakeBound: () => Promise<SharedBound>;
  /** The runtime sandboxes run under (gVisor or not), once the engine has said. */
  readonly ociRuntime: MadeOnce<RuntimeDescription>;
  /** The backend's description (`SandboxBackendV1.describe`): the engine's, and what is not enforced. */
  readonly describe: SandboxBackendV1['describe'];
}

/** The descriptions of one runtime (create-sandbox-runtime.ts). */
export function createRuntimeDescriptions(options: {
  readonly settings: SandboxSettings;
  readonly driver: SandboxDriverV1;
  readonly sandboxRoot: string | undefined;
  readonly cgroupRoot: string | undefined;
  readonly logger: HostLogger | undefined;
  /** Why the scope disks are not enforced, or `undefined`. */
  readonly disksUnenforced: string | undefined;
  readonly egressUnenforced: () => Promise<string | undefined>;
  readonly egressStatus: EgressBroker['status'];
}): RuntimeDescriptions {
  const { settings, driver } = options;
  /** With `existing`, the tag only if the installation has its key (describing creates nothing). */
  const boundOptions = (description: Awaited<ReturnType<SandboxDriverV1['describe']>>, existing = false) => ({
    settings,
    description,
    installationTag: (existing ? existingInstallationTag : installationTag)({ sandboxRoot: options.sandboxRoot, pool: settings.docker_network_pool }),
    ...(options.cgroupRoot ? { cgroupRoot: options.cgroupRoot } : {}),
  });
  // What depends on the engine's description, made once; asked again after a failure. (`BRIEFLY` but for the runtime's facts.)
  const onceDescribed = <T>(make: (description: DriverDescription) => Promise<T> | T, full?: 'with runtime versions') =>
    madeOnce(() => driver.describe(full ? undefined : BRIEFLY).then(make));

  const bound = onceDescribed(async (description) => {
    const prepared = await prepareSharedBound(boundOptions(description));
    if (prepared.unenforced) options.logger?.warn(`berth: ${prepared.unenforced}`);
    return prepared;
  });
  const ociRuntime = onceDescribed((description) => runtimeFacts(description, settings.docker_runtime), 'with runtime versions');

  return {
    bound,
    remakeBound: async () => prepareSharedBound(boundOptions(await driver.describe(BRIEFLY))),
    ociRuntime,
    async describe(describeOptions = {}): Promise<BackendDescription> {
      // The image is looked up beside the engine's description (berth doctor waits for both).
      const image = describeOptions.image;
      const present = image === undefined ? undefined : driver.hasImage(image);
      present?.catch(() => undefined);
      const driverDescription = await driver.describe(describeOptions.runtimeVersions === false ? BRIEFLY : undefined);
      // Described, not made: the bound is written before the first sandbox starts, not by a status.
      const made = bound.made();
      const described = await (made ?? prepareSharedBound({ ...boundOptions(driverDescription, true), dryRun: true }));
      // What the kernel enforces, read back: a bound removed or changed since it was made is not.
      const drift = made ? await boundDrift(described) : undefined;
      const shared = drift === undefined ? described : { ...described, unenforced: `${drift}; the next sandbox to start makes it again` };
      const notEnforced = [options.disksUnenforced, await options.egressUnenforced(), shared.unenforced].filter((line): line is string => line !== undefined);
      const description = backendDescription({ driver: driverDescription, settings, shared, notEnforced, egress: await options.egressStatus() });
      return image === undefined || present === undefined ? description : { ...description, image: { name: image, present: await present } };
    },
  };
}
