import { existsSync } from 'node:fs';
import path from 'node:path';

/** Where Berth will talk to a container engine, and why it chose that place. */
export interface EngineEndpoint {
  /** The engine the configured backend drives. */
  readonly engine: 'docker' | 'podman';
  /** A unix socket path, when the engine listens on one. */
  readonly socketPath?: string;
  /** An `http://host:port` base URL, when `DOCKER_HOST`/`CONTAINER_HOST` names a TCP endpoint. */
  readonly url?: string;
  /** How the endpoint was found, e.g. `DOCKER_HOST` or `default socket /var/run/docker.sock`. */
  readonly how: string;
  /** Human form of the endpoint, for messages. */
  readonly display: string;
}

function fromVariable(engine: EngineEndpoint['engine'], name: string, value: string): EngineEndpoint | undefined {
  if (value.startsWith('unix://')) {
    const socketPath = value.slice('unix://'.length);
    return { engine, socketPath, how: `$${name}`, display: socketPath };
  }
  if (value.startsWith('tcp://') || value.startsWith('http://')) {
    const url = `http://${value.replace(/^(?:tcp|http):\/\//, '')}`.replace(/\/+$/, '');
    return { engine, url, how: `$${name}`, display: url };
  }
  if (value.startsWith('/')) return { engine, socketPath: value, how: `$${name}`, display: value };
  return undefined;
}

/**
 * The tests' own way to find the engine they look at from outside (Berth's backends have their
 * own discovery, `findDockerEngine` and `findPodmanSocket`). Finds the endpoint the way operators expect: `$DOCKER_HOST` for Docker,
 * `$CONTAINER_HOST` then `$DOCKER_HOST` for Podman, else the first default socket that exists
 * (rootful, then the rootless one under `$XDG_RUNTIME_DIR`). Berth passes the result to the
 * backend, so `berth doctor` and the sandboxes always talk to the same engine.
 */
export function findEngine(engine: EngineEndpoint['engine'], environment: Readonly<Record<string, string | undefined>> = process.env): EngineEndpoint {
  const variables = engine === 'podman' ? ['CONTAINER_HOST', 'DOCKER_HOST'] : ['DOCKER_HOST'];
  for (const name of variables) {
    const value = environment[name];
    if (value) {
      const found = fromVariable(engine, name, value);
      if (found) return found;
    }
  }
  const runtime = environment.XDG_RUNTIME_DIR;
  const candidates =
    engine === 'podman'
      ? ['/run/podman/podman.sock', ...(runtime ? [path.join(runtime, 'podman', 'podman.sock')] : [])]
      : ['/var/run/docker.sock', '/run/docker.sock', ...(runtime ? [path.join(runtime, 'docker.sock')] : [])];
  for (const candidate of candidates) {
    if (existsSync(candidate)) return { engine, socketPath: candidate, how: `default socket ${candidate}`, display: candidate };
  }
  const fallback = candidates[0]!;
  return { engine, socketPath: fallback, how: `default socket ${fallback} (not found)`, display: fallback };
}
