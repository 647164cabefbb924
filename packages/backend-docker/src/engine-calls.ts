import { isSandboxConflict, isSandboxGone, type BerthError } from '@berth/core';
import type Dockerode from 'dockerode';
import type { DockerApiConnection } from './create-docker-api-driver.js';
import type { EngineReads } from './engine-reads.js';
import type { EngineErrorContext } from './map-docker-error.js';

/** How the Docker-API driver calls its engine: what its groups of calls (container-lifecycle.ts) share. */
export interface EngineCalls {
  /** `docker` or `podman`: in messages. */
  readonly engine: 'docker' | 'podman';
  /** Runs one engine call, mapping what it throws in the engine's one place. */
  call<T>(action: string, work: (connected: DockerApiConnection) => Promise<T>): Promise<T>;
  /** Whether an engine answer says the thing is gone, in the engine's own mapping. */
  isGone(error: unknown): boolean;
  /** Whether an engine answer says another caller got there first, in the engine's own mapping. */
  isConflict(error: unknown): boolean;
  /** A container's inspection, or `undefined` when it is gone. */
  inspectRaw(reads: EngineReads, nameOrId: string): Promise<Dockerode.ContainerInspectInfo | undefined>;
}

/** The engine calls over `connection`, with what they throw mapped by `mapError`. */
export function createEngineCalls(options: {
  readonly engine: 'docker' | 'podman';
  readonly connection: () => Promise<DockerApiConnection>;
  readonly mapError: (error: unknown, context: EngineErrorContext) => BerthError;
}): EngineCalls {
  const { engine, connection, mapError } = options;
  // What an engine answer means, in the engine's own mapping: Podman says 500 where Docker says 409.
  const kindOf = (error: unknown): BerthError => mapError(error, { engine, endpoint: '', action: '' });
  const isGone = (error: unknown): boolean => isSandboxGone(kindOf(error));
  return {
    engine,
    async call(action, work) {
      const connected = await connection();
      try {
        return await work(connected);
      } catch (error) {
        throw mapError(error, { engine, endpoint: connected.endpoint, action });
      }
    },
    isGone,
    isConflict: (error) => isSandboxConflict(kindOf(error)),
    async inspectRaw(reads, nameOrId) {
      try {
        return await reads.inspectContainer(nameOrId);
      } catch (error) {
        if (isGone(error)) return undefined;
        throw error;
      }
    },
  };
}
