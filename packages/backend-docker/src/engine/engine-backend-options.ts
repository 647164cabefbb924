import { parseTerminalConfig, SandboxError, type HostLogger, type TerminalConfig } from '@berth/core';
import type Dockerode from 'dockerode';
import { z } from 'zod';
import type { ProgressEvent } from './create-engine-backend.js';

/** The options every engine package's factory takes (`createDockerBackend`, `createPodmanBackend`). */
export interface EngineBackendFactoryOptions {
  /** The validated `terminal:` section (core's `parseTerminalConfig`). */
  config: TerminalConfig;
  /** An existing client for the engine's Docker-compatible API; else the package finds the engine. */
  docker?: Dockerode;
  /** The engine's Unix socket. */
  socketPath?: string;
  /** Overrides `config.docker_image`. */
  image?: string;
  /** Where Berth logs what it does; never a secret value. */
  logger?: HostLogger;
  /** Progress of pulls, creates and starts, for a user waiting on a first command. */
  onProgress?: (event: ProgressEvent) => void;
  /** Prefix of container names. @default 'berth-' */
  namePrefix?: string;
  /** Labels added to every sandbox and required of every sandbox this backend lists, adopts or reaps. */
  labels?: Record<string, string>;
  /** Milliseconds between automatic reaps; 0: only explicit `reap()` calls. @default a quarter of `lifetime_seconds` */
  reapIntervalMs?: number;
}

/** The zod schema of {@link EngineBackendFactoryOptions}; engine packages extend it with their own. */
export const engineBackendOptionsSchema = z.object({
  config: z.custom<TerminalConfig>((value) => value !== null && typeof value === 'object', { message: 'expected the validated terminal config' }),
  docker: z.custom<Dockerode>((value) => value === undefined || (value !== null && typeof value === 'object')).optional(),
  socketPath: z.string().min(1).optional(),
  image: z.string().min(1).regex(/^\S+$/, { message: 'expected an image reference without spaces' }).optional(),
  logger: z.custom<HostLogger>((value) => value === undefined || (typeof value === 'object' && value !== null && typeof (value as HostLogger).warn === 'function')).optional(),
  onProgress: z.custom<(event: ProgressEvent) => void>((value) => value === undefined || typeof value === 'function').optional(),
  namePrefix: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,40}$/, { message: 'expected letters, digits, "_", "." or "-"' }).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  reapIntervalMs: z.number().int().min(0).optional(),
});

/**
 * Checks a factory's options against `schema` (one-line `OPTIONS_INVALID` naming the factory and
 * the option) and returns the terminal config, validating a raw section too, so a caller that
 * skipped `parseTerminalConfig` still gets errors that name the key.
 */
export function validateEngineBackendOptions(factory: string, options: EngineBackendFactoryOptions, schema: z.ZodType = engineBackendOptionsSchema): TerminalConfig {
  const parsed = schema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new SandboxError('OPTIONS_INVALID', `${factory}: option ${issue.path.join('.') || '(root)'} is invalid: ${issue.message}`);
  }
  return options.config.docker_exec_mode === undefined ? parseTerminalConfig(options.config) : options.config;
}
