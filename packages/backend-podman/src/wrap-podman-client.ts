import type Dockerode from 'dockerode';
import { normalizePodmanError } from './normalize-podman-error.js';

/** What {@link wrapPodmanClient} changes on the way to the engine. */
export interface PodmanClientOptions {
  /** Applied to every container spec before `createContainer` sends it. */
  readonly transformCreate?: (spec: Dockerode.ContainerCreateOptions) => Dockerode.ContainerCreateOptions;
  /** Replaces the compatible create (Podman's own API, say); resolves to the new container's id. */
  readonly createContainer?: (spec: Dockerode.ContainerCreateOptions) => Promise<string>;
}

/** dockerode's entity objects (container, exec, image, network) carry the client's modem. */
function isEntity(value: unknown): value is object {
  return typeof value === 'object' && value !== null && 'modem' in value && typeof (value as { pipe?: unknown }).pipe !== 'function';
}

function wrapEntity<T extends object>(target: T, options: PodmanClientOptions, isRoot: boolean): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver) as unknown;
      // The modem (demuxStream, followProgress) and plain data pass through untouched.
      if (typeof value !== 'function' || property === 'constructor') return value;
      return (...args: unknown[]) => {
        if (isRoot && property === 'createContainer' && options.transformCreate && args[0] && typeof args[0] === 'object') {
          args[0] = options.transformCreate(args[0] as Dockerode.ContainerCreateOptions);
        }
        if (isRoot && property === 'createContainer' && options.createContainer) {
          const create = options.createContainer;
          const docker = object as unknown as Dockerode;
          return create(args[0] as Dockerode.ContainerCreateOptions).then(
            (id) => wrapEntity(docker.getContainer(id), options, false),
            (error: unknown) => {
              throw normalizePodmanError(error);
            },
          );
        }
        let result: unknown;
        try {
          result = (value as (...parameters: unknown[]) => unknown).apply(object, args);
        } catch (error) {
          throw normalizePodmanError(error);
        }
        if (result instanceof Promise) {
          return result.then(
            (resolved: unknown) => (isEntity(resolved) ? wrapEntity(resolved, options, false) : resolved),
            (error: unknown) => {
              throw normalizePodmanError(error);
            },
          );
        }
        return isEntity(result) ? wrapEntity(result, options, false) : result;
      };
    },
  });
}

/**
 * A dockerode client for Podman's Docker-compatible API that the shared engine layer can use
 * as if it were Docker: Podman's status codes are rewritten to Docker's where they differ (see
 * normalize-podman-error.ts), and container specs get Podman's last transform before create.
 */
export function wrapPodmanClient(docker: Dockerode, options: PodmanClientOptions = {}): Dockerode {
  return wrapEntity(docker, options, true);
}
