import { SandboxError, type HostLogger } from '@berth/core';
import { createSandboxRuntime, installationTag, sandboxBridgeName, sandboxSettings, type ProgressEvent, type SandboxRuntime, type SandboxSettingsInput } from '@berth/sandbox-runtime';
import Dockerode from 'dockerode';
import { z } from 'zod';
import { createDockerApiDriver } from './create-docker-api-driver.js';
import { findDockerEngine } from './find-docker-engine.js';
import { mapDockerError } from './map-docker-error.js';
import { createSandboxNetworks } from './sandbox-networks.js';

/** Options of {@link createDockerDriver}. */
export interface DockerDriverOptions {
  /** An existing client; else one is made for the engine `findDockerEngine` finds. */
  readonly docker?: Dockerode;
  /** The engine's Unix socket. @default `$DOCKER_HOST`, else the first default socket that exists */
  readonly socketPath?: string;
  /** The gateway's environment, read for `DOCKER_HOST`. @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** The IPv4 range each sandbox's own /29 network is taken from (`terminal.docker_network_pool`). @default '10.217.0.0/16' */
  readonly networkPool?: string;
  /** Labels on every network Berth makes (a test run's marker, say). */
  readonly labels?: Readonly<Record<string, string>>;
  /** The folder of this installation's sandboxes (`{sandbox_dir}/docker`): only those whose workspace is inside it are this backend's to list, adopt, reap, stop and remove; its installation key names its sandboxes' bridges for the egress policy. */
  readonly sandboxRoot?: string;
}

/** The Docker driver: hardened containers, each on a bridge network of its own. */
export function createDockerDriver(options: DockerDriverOptions = {}) {
  const found = findDockerEngine({ ...(options.socketPath ? { socketPath: options.socketPath } : {}), ...(options.environment ? { environment: options.environment } : {}) });
  return createDockerApiDriver({
    engine: 'docker',
    capabilities: { networkIsolation: true, hostFolders: true, processList: true },
    specRevision: 'docker-2',
    mapError: mapDockerError,
    connect: async () => {
      const docker = options.docker ?? new Dockerode(found.connection);
      const endpoint = options.docker ? 'the given client' : found.endpoint;
      const pool = options.networkPool ?? '10.217.0.0/16';
      // A Unix socket is an engine on this host: its bridges are this host's, and so is the firewall.
      const socketPath = (docker.modem as { socketPath?: unknown }).socketPath;
      return {
        docker,
        endpoint,
        discovery: options.docker ? 'the docker option' : found.discovery,
        networks: createSandboxNetworks({
          docker,
          endpoint,
          pool,
          ...(options.labels ? { labels: options.labels } : {}),
          // The installation's egress table knows its sandboxes by their bridges' names.
          bridgeName: (name) => sandboxBridgeName(installationTag({ sandboxRoot: options.sandboxRoot, pool }), name),
        }),
        ...(typeof socketPath === 'string' ? { networkPool: pool } : {}),
      };
    },
  });
}

/** Options of {@link createDockerBackend}. */
export interface DockerBackendOptions extends DockerDriverOptions {
  /** The settings the sandboxes follow (`sandboxSettings(config)` of `@berth/sandbox-runtime`; a raw `terminal:` part is validated). */
  readonly settings: SandboxSettingsInput;
  /** Overrides `settings.docker_image`. */
  readonly image?: string;
  /** Where Berth logs what it does; never a secret value. */
  readonly logger?: HostLogger;
  /** Progress of pulls, creates and starts, for a user waiting on a first command. */
  readonly onProgress?: (event: ProgressEvent) => void;
  /** Prefix of container names. @default 'berth-' */
  readonly namePrefix?: string;
  /** Milliseconds between automatic reaps; 0: only explicit `reap()` calls. @default a quarter of `lifetime_seconds` */
  readonly reapIntervalMs?: number;
}

/** The Docker backend: the sandbox runtime over the Docker driver. */
export type DockerBackend = SandboxRuntime;

const optionsSchema = z.object({
  settings: z.custom<SandboxSettingsInput>((value) => value !== null && typeof value === 'object', { message: 'expected the sandbox settings (sandboxSettings(config))' }),
  docker: z.custom<Dockerode>((value) => value === undefined || (value !== null && typeof value === 'object')).optional(),
  socketPath: z.string().min(1).optional(),
  // process.env is no plain object, which z.record refuses.
  environment: z.custom<Readonly<Record<string, string | undefined>>>((value) => value === undefined || (value !== null && typeof value === 'object'), { message: 'expected the environment as an object of strings' }).optional(),
  networkPool: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  sandboxRoot: z.string().min(1).refine((value) => value.startsWith('/'), { message: 'expected an absolute folder' }).optional(),
  image: z.string().min(1).regex(/^\S+$/, { message: 'expected an image reference without spaces' }).optional(),
  logger: z.custom<HostLogger>((value) => value === undefined || (typeof value === 'object' && value !== null && typeof (value as HostLogger).warn === 'function')).optional(),
  onProgress: z.custom<(event: ProgressEvent) => void>((value) => value === undefined || typeof value === 'function').optional(),
  namePrefix: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,40}$/, { message: 'expected letters, digits, "_", "." or "-"' }).optional(),
  reapIntervalMs: z.number().int().min(0).optional(),
});

/** Checks a factory's options (one-line `OPTIONS_INVALID` naming the factory and the option). */
export function validateBackendOptions<T>(factory: string, schema: z.ZodType, options: T): T {
  const parsed = schema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new SandboxError('OPTIONS_INVALID', `${factory}: option ${issue.path.join('.') || '(root)'} is invalid: ${issue.message}`);
  }
  return options;
}

/**
 * Creates the Docker backend: one hardened container per scope on a Docker Engine, each on a
 * network of its own, commands through a persistent shell. See docs/backend-docker.md.
 */
export function createDockerBackend(options: DockerBackendOptions): DockerBackend {
  validateBackendOptions('createDockerBackend', optionsSchema, options);
  const settings = sandboxSettings(options.settings);
  return createSandboxRuntime({
    driver: createDockerDriver({ ...options, networkPool: options.networkPool ?? settings.docker_network_pool }),
    settings,
    ...(options.image ? { image: options.image } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.namePrefix ? { namePrefix: options.namePrefix } : {}),
    ...(options.labels ? { labels: options.labels } : {}),
    ...(options.sandboxRoot ? { sandboxRoot: options.sandboxRoot } : {}),
    ...(options.reapIntervalMs !== undefined ? { reapIntervalMs: options.reapIntervalMs } : {}),
  });
}
