import { EngineUnavailableError, ImageNotFoundError, type BerthError } from '@berth/core';
import type { DriverCapabilities, SandboxDriverV1 } from '@berth/core/driver';
import type Dockerode from 'dockerode';
import { engineMessage, type EngineErrorContext } from './map-docker-error.js';
import { openExecChannel } from './open-exec-channel.js';
import { createContainerEnds, type ContainerEnds } from './container-ends.js';
import { containerLifecycle } from './container-lifecycle.js';
import { createEngineCalls } from './engine-calls.js';
import type { SandboxNetworks } from './sandbox-networks.js';
import { ownNetworkOf, readTopListing, stateOf, withoutSlash } from './container-record.js';
import { describeEngine, reusedDescriptions } from './describe-engine.js';
import type { EngineReads } from './engine-reads.js';

/** The engine's own processes in a container (an init it runs the launcher under). */
const ENGINE_PROCESS = /(^|\/)(docker-init|tini|catatonit|conmon)\b/;

/** A connection to a Docker-compatible engine, and what its engine changes about creating sandboxes. */
export interface DockerApiConnection {
  /** The client of every call that changes the engine (a getter may make it on first use). */
  readonly docker: Dockerode;
  /** The read-only calls (ping, version, info, lists, inspections): engine-reads.ts. */
  readonly reads: EngineReads;
  /** The socket path or URL, for messages. */
  readonly endpoint: string;
  /** How the endpoint was found. */
  readonly discovery: string;
  /** How each sandbox gets its network. */
  readonly networks: SandboxNetworks;
  /** The engine's last word on a create request (Podman's user namespace, say). */
  readonly adjustCreate?: (options: Dockerode.ContainerCreateOptions) => Dockerode.ContainerCreateOptions;
  /** Creates through another endpoint (Podman's own API); resolves to the new container's id. */
  readonly createContainer?: (options: Dockerode.ContainerCreateOptions) => Promise<string>;
  /** The OCI runtime a container was made under, where the engine's compatible inspect does not say (Podman's shows `oci`). */
  readonly runtimeOf?: (id: string) => Promise<string | undefined>;
  /** What the operator should know about this engine. */
  readonly warnings?: readonly string[];
  /** See `DriverDescription.networkPool`: set when the sandbox networks are pool bridges on this host. */
  readonly networkPool?: string;
}

/** Options of {@link createDockerApiDriver}. */
export interface DockerApiDriverOptions {
  /** `docker` or `podman`: in labels and messages. */
  readonly engine: 'docker' | 'podman';
  readonly capabilities: DriverCapabilities;
  /** See `SandboxDriverV1.specRevision`. */
  readonly specRevision: string;
  /** Connects on first use (discovery may probe); a failure is retried on the next call. */
  readonly connect: () => Promise<DockerApiConnection>;
  /** The engine's one mapping of its answers to Berth errors. */
  readonly mapError: (error: unknown, context: EngineErrorContext) => BerthError;
  /** Called before a removed sandbox's host folders are purged. */
  readonly beforePurge?: SandboxDriverV1['beforePurge'];
}

/**
 * A driver over an engine's Docker-compatible API (Docker Engine, Podman's service): the one
 * translation of the driver port to dockerode, with the engine's differences as the typed
 * hooks of its connection (network, create adjustments, another create endpoint) and its own
 * error mapping.
 */
export function createDockerApiDriver(options: DockerApiDriverOptions): SandboxDriverV1 & { connection(): Promise<DockerApiConnection> } {
  const { engine } = options;
  let connecting: Promise<DockerApiConnection> | undefined;
  const connection = (): Promise<DockerApiConnection> => {
    connecting ??= options.connect().catch((error: unknown) => {
      connecting = undefined;
      throw error;
    });
    return connecting;
  };
  // Every engine call goes through `calls`, which maps what the engine throws.
  const calls = createEngineCalls({ engine, connection, mapError: options.mapError });
  const { call, isGone, inspectRaw } = calls;

  // The exec channels, ended when their container ends (container-ends.ts: gVisor leaves them open).
  let ends: ContainerEnds | undefined;

  // The engine's version, runtimes and size, asked once a minute at most (describe-engine.ts);
  // a status line asks without the runtimes' versions (a process each).
  const describe = reusedDescriptions((asked) => call('read the engine version', (connected) => describeEngine(engine, connected, asked)));

  return {
    specificationVersion: 'v1',
    engine,
    async close() {
      ends?.close();
      const connected = await connecting?.catch(() => undefined);
      await connected?.networks.close();
    },
    capabilities: options.capabilities,
    specRevision: options.specRevision,
    connection,
    ...(options.beforePurge ? { beforePurge: options.beforePurge } : {}),

    ping: () => call('reach the engine', ({ reads }) => reads.ping()),

    describe: (describeOptions) => describe(describeOptions),

    hasImage: (image) =>
      call(`inspect image ${image}`, async ({ reads }) => {
        try {
          await reads.inspectImage(image);
          return true;
        } catch (error) {
          if (isGone(error)) return false;
          throw error;
        }
      }),

    async prepareImage(image, onProgress) {
      const connected = await connection();
      const { docker } = connected;
      try {
        const stream = await docker.pull(image);
        await new Promise<void>((resolve, reject) => {
          docker.modem.followProgress(
            stream,
            (error: Error | null) => (error ? reject(error) : resolve()),
            (event: { status?: string; progress?: string; id?: string }) => onProgress?.([event.id, event.status, event.progress].filter(Boolean).join(' ')),
          );
        });
        await docker.getImage(image).inspect();
      } catch (error) {
        const mapped = options.mapError(error, { engine, endpoint: connected.endpoint, action: `pull ${image}` });
        if (mapped instanceof EngineUnavailableError) throw mapped;
        throw new ImageNotFoundError(
          image,
          `image ${image} is not on the ${engine} engine and could not be pulled (${engineMessage(error)}); ` +
            `run \`${engine} pull ${image}\` where a registry is reachable, or set terminal.docker_image to an image you have`,
          { cause: error },
        );
      }
    },

    inspect: (nameOrId) =>
      call(`inspect container ${nameOrId}`, async ({ reads }) => {
        const info = await inspectRaw(reads, nameOrId);
        return info ? { id: info.Id, name: withoutSlash(info.Name), state: stateOf(info.State), labels: info.Config.Labels ?? {} } : undefined;
      }),

    list: (labels) =>
      call('list sandboxes', async ({ reads }) => {
        const containers = await reads.listContainers(Object.entries(labels).map(([key, value]) => `${key}=${value}`));
        return containers.map((container) => ({
          id: container.Id,
          name: withoutSlash(container.Names?.[0]),
          state: stateOf(container.State),
          labels: container.Labels ?? {},
        }));
      }),

    // Making, starting, stopping and removing the container, with its own network: container-lifecycle.ts.
    ...containerLifecycle(calls),

    networkAddress: (id) =>
      call(`read the address of ${id}`, async ({ reads, networkPool }) => {
        if (!networkPool) return undefined;
        const info = await inspectRaw(reads, id);
        const network = info && ownNetworkOf(info);
        const settings = network ? info.NetworkSettings?.Networks?.[network] : undefined;
        if (!settings?.IPAddress || !settings.Gateway) return undefined;
        return { address: settings.IPAddress, gateway: settings.Gateway };
      }),

    // The engine's list of the sandbox's processes; the runtime decides whether it is busy.
    listProcesses: (id) =>
      call(`list the processes of ${id}`, async ({ docker, reads, runtimeOf }) => {
        // Under gVisor the user's processes live in its own kernel, and the engine's list is
        // wrong (it reads gVisor's own process ids as the host's: seen naming the host's init):
        // no commands, so the runtime lists them from inside.
        const runtime = runtimeOf ? await runtimeOf(id) : (await reads.inspectContainer(id)).HostConfig.Runtime;
        const versions = runtime ? (await describe().catch(() => undefined))?.runtimeVersions : undefined;
        if (runtime && /^runsc\b/.test(versions?.[runtime] ?? '')) return { engineProcess: ENGINE_PROCESS };
        const top = (await docker.getContainer(id).top({ ps_args: '-o pid,ppid,pgid,args' })) as { Titles?: string[]; Processes?: string[][] };
        return { ...readTopListing(top), engineProcess: ENGINE_PROCESS };
      }),

    openChannel: (id, command, channelOptions) =>
      call(`run a command in container ${id}`, async ({ docker }) => {
        ends ??= createContainerEnds(docker);
        return ends.track(id, await openExecChannel(docker, id, command, channelOptions));
      }),
  };
}
