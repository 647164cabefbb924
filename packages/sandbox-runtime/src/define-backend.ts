import { SandboxError, type HostLogger } from '@berth/core';
import type { SandboxDriverV1 } from '@berth/core/driver';
import { z } from 'zod';
import { createSandboxRuntime, type SandboxRuntime } from './create-sandbox-runtime.js';
import type { SandboxRuntimeOptions } from './sandbox-runtime-options.js';
import type { EgressProxyHooks } from './egress/egress-broker.js';
import type { ProgressEvent } from './runtime-context.js';
import type { RuntimeObserver } from './runtime-observer.js';
import { sandboxSettings, type SandboxSettings, type SandboxSettingsInput } from './sandbox-settings.js';

/** The runtime's options a backend factory passes on as they are given (documented in `SandboxRuntimeOptions`). */
const RUNTIME_OPTIONS = ['image', 'logger', 'onProgress', 'namePrefix', 'labels', 'sandboxRoot', 'reapIntervalMs', 'egressProxy', 'observer'] as const;

/** The options every backend factory takes, whatever its engine; a backend adds its engine's own. */
export interface BackendOptions extends Pick<SandboxRuntimeOptions, (typeof RUNTIME_OPTIONS)[number]> {
  /** The settings the sandboxes follow (`sandboxSettings(config)`; a raw `terminal:` part is validated). */
  readonly settings: SandboxSettingsInput;
  /** The gateway's environment, where the backend looks for its engine (`DOCKER_HOST`, `CONTAINER_HOST`, the kubeconfig). @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
}

/**
 * The schema of {@link BackendOptions}: a backend's own schema is this one `.extend`ed with its
 * engine's options (and may narrow one, as Kubernetes does `namePrefix`).
 */
export const backendOptionsSchema = z.object({
  settings: z.custom<SandboxSettingsInput>((value) => value !== null && typeof value === 'object', {
    message: 'expected the sandbox settings (sandboxSettings(config))',
  }),
  image: z.string().min(1).regex(/^\S+$/, { message: 'expected an image reference without spaces' }).optional(),
  // process.env is no plain object, which z.record refuses.
  environment: z
    .custom<Readonly<Record<string, string | undefined>>>((value) => value === undefined || (value !== null && typeof value === 'object'), {
      message: 'expected the environment as an object of strings',
    })
    .optional(),
  logger: z
    .custom<HostLogger>((value) => value === undefined || (typeof value === 'object' && value !== null && typeof (value as HostLogger).warn === 'function'))
    .optional(),
  onProgress: z.custom<(event: ProgressEvent) => void>((value) => value === undefined || typeof value === 'function').optional(),
  namePrefix: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,40}$/, { message: 'expected letters, digits, "_", "." or "-"' })
    .optional(),
  labels: z.record(z.string(), z.string()).optional(),
  sandboxRoot: z
    .string()
    .min(1)
    .refine((value) => value.startsWith('/'), { message: 'expected an absolute folder' })
    .optional(),
  reapIntervalMs: z.number().int().min(0).optional(),
  observer: z
    .custom<RuntimeObserver>(
      (value) => value === undefined || (typeof value === 'object' && value !== null && typeof (value as RuntimeObserver).event === 'function'),
      {
        message: 'expected a runtime observer (createRuntimeMetrics().observer)',
      },
    )
    .optional(),
  egressProxy: z
    .object({
      upstreamCa: z.array(z.string().includes('-----BEGIN CERTIFICATE-----', { message: 'expected PEM certificates' })).optional(),
      lookup: z
        .custom<NonNullable<EgressProxyHooks['lookup']>>((value) => typeof value === 'function', { message: 'expected a dns.lookup-like function' })
        .optional(),
    })
    .optional(),
});

/** What {@link defineBackend} takes: how one engine's backend is made. */
export interface BackendDefinition<Options extends BackendOptions, Driver extends SandboxDriverV1, Backend extends SandboxRuntime> {
  /** The factory's name as its callers write it (`createDockerBackend`): an invalid option's error starts with it. */
  readonly name: string;
  /** Every option the factory takes: {@link backendOptionsSchema} extended with the engine's own. */
  readonly options: z.ZodType;
  /** The settings the runtime follows, from the validated ones (Kubernetes: no host to size `docker_max_running: auto` against). */
  readonly settings?: (settings: SandboxSettings) => SandboxSettings;
  /** Makes the engine's driver from the factory's options and the settings. Must not contact the engine: factories build only. */
  readonly driver: (options: Options, settings: SandboxSettings) => Driver;
  /** What the backend offers besides the runtime's methods (Podman: the engine facts it adapted to). */
  readonly extend?: (runtime: SandboxRuntime, driver: Driver) => Backend;
}

/**
 * Defines a backend: returns its factory, which checks the options against the definition's
 * schema (a bad one is a one-line `OPTIONS_INVALID` naming the factory and the option), validates
 * the settings, makes the driver and runs the sandbox runtime over it with the options every
 * backend shares. The Docker, Podman and Kubernetes backends are each one definition; a third
 * party's backend is one more.
 */
export function defineBackend<Options extends BackendOptions, Driver extends SandboxDriverV1, Backend extends SandboxRuntime = SandboxRuntime>(
  definition: BackendDefinition<Options, Driver, Backend>,
): (options: Options) => Backend {
  return (options) => {
    const parsed = definition.options.safeParse(options);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new SandboxError('OPTIONS_INVALID', `${definition.name}: option ${issue.path.join('.') || '(root)'} is invalid: ${issue.message}`);
    }
    const validated = sandboxSettings(options.settings);
    const settings = definition.settings ? definition.settings(validated) : validated;
    const driver = definition.driver(options, settings);
    // What the schema let through is passed on as given (it refuses empty names and prefixes).
    const given = RUNTIME_OPTIONS.filter((key) => options[key] !== undefined).map((key) => [key, options[key]]);
    const runtime = createSandboxRuntime({ driver, settings, ...(Object.fromEntries(given) as Pick<SandboxRuntimeOptions, (typeof RUNTIME_OPTIONS)[number]>) });
    return definition.extend ? definition.extend(runtime, driver) : (runtime as Backend);
  };
}
