import { existsSync } from 'node:fs';
import path from 'node:path';

/** Where a Docker client talks, and how Berth found it. */
export interface DockerEngineEndpoint {
  /** What dockerode is given. */
  readonly connection: { readonly socketPath: string } | { readonly host: string; readonly port: number; readonly protocol: 'http' | 'https' };
  /** The socket path or URL, for messages. */
  readonly endpoint: string;
  /** How it was found, e.g. `$DOCKER_HOST` or `default socket /var/run/docker.sock`. */
  readonly discovery: string;
}

/** The default sockets, in the order they are tried. */
export function dockerSocketCandidates(environment: Readonly<Record<string, string | undefined>>): string[] {
  const runtime = environment.XDG_RUNTIME_DIR;
  return ['/var/run/docker.sock', '/run/docker.sock', ...(runtime ? [path.join(runtime, 'docker.sock')] : [])];
}

/**
 * Finds the Docker Engine the way operators expect: the given socket, else `DOCKER_HOST` from
 * the gateway's environment (`unix://`, `tcp://`, `http(s)://` or a path), else the first
 * default socket that exists (rootful, then the rootless one under `$XDG_RUNTIME_DIR`). The one
 * discovery of Docker: the backend, `berth doctor` and the CLI all come through here.
 */
export function findDockerEngine(options: { socketPath?: string; environment?: Readonly<Record<string, string | undefined>> } = {}): DockerEngineEndpoint {
  if (options.socketPath) return { connection: { socketPath: options.socketPath }, endpoint: options.socketPath, discovery: 'the socketPath option' };
  const environment = options.environment ?? process.env;
  const host = environment.DOCKER_HOST;
  if (host) {
    if (host.startsWith('unix://')) {
      const socketPath = host.slice('unix://'.length);
      return { connection: { socketPath }, endpoint: socketPath, discovery: '$DOCKER_HOST' };
    }
    if (host.startsWith('/')) return { connection: { socketPath: host }, endpoint: host, discovery: '$DOCKER_HOST' };
    const url = new URL(host.replace(/^tcp:\/\//, 'http://'));
    const protocol = url.protocol === 'https:' ? 'https' : 'http';
    const port = Number(url.port || (protocol === 'https' ? 2376 : 2375));
    return { connection: { host: url.hostname, port, protocol }, endpoint: `${protocol}://${url.hostname}:${port}`, discovery: '$DOCKER_HOST' };
  }
  const candidates = dockerSocketCandidates(environment);
  const found = candidates.find((candidate) => existsSync(candidate));
  const socketPath = found ?? candidates[0]!;
  return { connection: { socketPath }, endpoint: socketPath, discovery: found ? `default socket ${socketPath}` : `default socket ${socketPath} (not found)` };
}
