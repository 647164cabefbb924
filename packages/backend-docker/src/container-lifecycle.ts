import { ImageNotFoundError, SandboxError } from '@berth/core';
import type { SandboxDriverV1, SandboxSpec } from '@berth/core/driver';
import { LABELS } from '@berth/sandbox-runtime/driver';
import { ownNetworkOf } from './container-record.js';
import type { EngineCalls } from './engine-calls.js';
import { engineMessage, isAlreadyDone } from './map-docker-error.js';
import { toContainerCreateOptions } from './to-container-options.js';

/** How long after a new sandbox started the spare network for the next one is made. */
const REFILL_DELAY_MS = 200;

/** The calls of the driver port that make, start, stop and remove a sandbox's container. */
export type ContainerLifecycle = Pick<SandboxDriverV1, 'prepare' | 'create' | 'start' | 'stop' | 'pause' | 'unpause' | 'remove' | 'rename'>;

/**
 * A sandbox's container and its own network, from prepare() to remove(): the network taken for
 * it, the create request (refused when the engine ignored the runtime asked for), and the
 * network released with the container.
 */
export function containerLifecycle({ engine, call, isGone, isConflict, inspectRaw }: EngineCalls): ContainerLifecycle {
  // Networks taken by prepare() for the create() that follows, by sandbox name.
  const taken = new Map<string, Promise<{ mode: string; pool: boolean }>>();

  return {
    prepare: (spec: SandboxSpec) =>
      call(`create the network of ${spec.name}`, async ({ networks }) => {
        if (!spec.network) return;
        // Kept for create(); a create that never came (the host's folders failed) leaves it for the next attempt.
        let network = taken.get(spec.name);
        if (!network) {
          network = networks.take();
          taken.set(spec.name, network);
          network.catch(() => taken.delete(spec.name));
        }
        await network;
      }),

    create: (spec: SandboxSpec) =>
      call(`create container ${spec.name}`, async ({ docker, reads, networks, adjustCreate, createContainer, runtimeOf }) => {
        let network: { mode: string; pool: boolean } = { mode: 'none', pool: false };
        if (spec.network) {
          const prepared = taken.get(spec.name);
          taken.delete(spec.name);
          network = await (prepared ?? networks.take());
        }
        const base = toContainerCreateOptions(spec, network.mode);
        const withLabel = network.pool ? { ...base, Labels: { ...base.Labels, [LABELS.network]: network.mode } } : base;
        const request = adjustCreate ? adjustCreate(withLabel) : withLabel;
        let created = false;
        try {
          const id = createContainer ? await createContainer(request) : (await docker.createContainer(request)).id;
          created = true;
          const wanted = spec.security.runtime;
          if (wanted) {
            // An engine may take the runtime and ignore it (Podman 4.3's API runs every container
            // under its service's own runtime): a sandbox asked for under another runtime (gVisor,
            // say) never runs under the default, so one made so goes again at once, never started.
            const actual = runtimeOf ? await runtimeOf(id) : (await reads.inspectContainer(id)).HostConfig.Runtime;
            if (actual !== wanted) {
              await docker
                .getContainer(id)
                .remove({ force: true, v: true })
                .catch(() => undefined);
              created = false;
              const fix =
                engine === 'podman'
                  ? "Podman runs every container its API service makes under the service's own runtime: " +
                    `point Berth at a Podman service started with --runtime ${wanted}`
                  : "check the engine's runtimes";
              throw new SandboxError(
                'RUNTIME_IGNORED',
                `the ${engine} engine made sandbox ${spec.name} under ${actual ?? 'an unknown runtime'}, not ${wanted} (terminal.docker_runtime), ` +
                  `so Berth removed it unstarted; ${fix} (docs/gvisor.md), or unset docker_runtime`,
              );
            }
          }
          return id;
        } catch (error) {
          // 409: another process created it first; the runtime adopts that one.
          if (isConflict(error)) return undefined;
          if (isGone(error) && /image/i.test(engineMessage(error))) {
            throw new ImageNotFoundError(
              spec.image,
              `image ${spec.image} vanished from the ${engine} engine (${engineMessage(error)}); the next command pulls it again, or set terminal.docker_image`,
              { cause: error },
            );
          }
          throw error;
        } finally {
          // A network no container got goes again.
          if (network.pool && !created) await networks.release(network.mode);
        }
      }),

    start: (id, startOptions = {}) =>
      call(`start container ${id}`, async ({ docker, reads, networks }) => {
        // A sandbox's own network may have been removed while it was stopped.
        if (!startOptions.justCreated) {
          const info = await reads.inspectContainer(id);
          const network = ownNetworkOf(info);
          if (network) await networks.prepare(network);
        }
        try {
          await docker.getContainer(id).start();
        } catch (error) {
          if (!isAlreadyDone(error)) throw error;
        }
        // The next new sandbox's network is made a moment after this one started and opened its
        // shells: made meanwhile, it would slow them by about as much as it saves (the engine
        // makes networks and starts containers one at a time).
        if (startOptions.justCreated) setTimeout(() => networks.refill(), REFILL_DELAY_MS).unref();
      }),

    stop: (id, graceSeconds) =>
      call(`stop container ${id}`, async ({ docker }) => {
        try {
          await docker.getContainer(id).stop({ t: graceSeconds });
        } catch (error) {
          if (!isAlreadyDone(error) && !isGone(error)) throw error;
        }
      }),

    pause: (id) => call(`pause container ${id}`, async ({ docker }) => void (await docker.getContainer(id).pause())),

    unpause: (id) => call(`unpause container ${id}`, async ({ docker }) => void (await docker.getContainer(id).unpause())),

    remove: (id) =>
      call(`remove container ${id}`, async ({ docker, reads, networks }) => {
        const info = await inspectRaw(reads, id);
        if (!info) return;
        try {
          await docker.getContainer(id).remove({ force: true, v: true });
        } catch (error) {
          // 404: gone already; 409: a removal is already in progress elsewhere.
          if (!isGone(error) && !isConflict(error)) throw error;
        }
        const network = ownNetworkOf(info);
        if (network) await networks.release(network);
      }),

    rename: (id, name) => call(`rename container ${id}`, async ({ docker }) => void (await docker.getContainer(id).rename({ name }))),
  };
}
