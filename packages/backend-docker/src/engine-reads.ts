import type * as Http from 'node:http';
import { createRequire } from 'node:module';
import type Dockerode from 'dockerode';
import type { DockerEngineEndpoint } from './find-docker-engine.js';

/**
 * The engine's read-only answers (ping, version, info, lists and inspections) without loading
 * dockerode: dockerode brings ssh2, gRPC and protobufjs, about 200 ms of every CLI command, for
 * transports and builds that `berth ls`, `berth doctor` and the first look at a sandbox never use.
 * Everything that changes the engine still goes through dockerode, loaded on first use
 * (create-docker-backend.ts). Errors have dockerode's shape (`statusCode`, `code`), so the one
 * mapping in map-docker-error.ts reads them alike.
 */
export interface EngineReads {
  /** The engine's Unix socket, when its path is known. */
  readonly socketPath?: string;
  /** The engine is reached over a Unix socket, so it runs on this host (its runtimes' binaries are this host's). */
  readonly local: boolean;
  ping(): Promise<void>;
  version(): Promise<Dockerode.DockerVersion>;
  info(): Promise<Record<string, unknown>>;
  /** Every container (running or not) carrying all of `labels` (`key=value`). */
  listContainers(labels: readonly string[]): Promise<Dockerode.ContainerInfo[]>;
  inspectContainer(nameOrId: string): Promise<Dockerode.ContainerInspectInfo>;
  inspectImage(name: string): Promise<Dockerode.ImageInspectInfo>;
}

/**
 * The most an answer may hold. An engine is trusted more than a sandbox, but a list is still
 * read no further than this: 64 MiB holds the list of tens of thousands of containers.
 */
export const MAX_ENGINE_ANSWER_BYTES = 64 * 1024 * 1024;

/** An engine answer that was not 2xx, shaped as dockerode's errors are. */
function statusError(status: number, body: string): Error {
  let message = body.trim();
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed.message === 'string') message = parsed.message;
  } catch {
    // Not JSON: the text itself.
  }
  return Object.assign(new Error(`(HTTP code ${status}) ${message.slice(0, 1000)}`), { statusCode: status });
}

/**
 * A built-in module without its ESM facade: an `import` of node:http evaluates every export,
 * undici's among them (about 40 ms), and node:https loads TLS; neither is needed to read a socket.
 */
function builtin<T>(name: string): T {
  return (process.getBuiltinModule?.(name) ?? createRequire(import.meta.url)(name)) as T;
}

/** Reads one answer whole, refusing one larger than `MAX_ENGINE_ANSWER_BYTES`. */
function readAnswer(response: Http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ENGINE_ANSWER_BYTES) {
        response.destroy(new Error(`the engine's answer is larger than ${MAX_ENGINE_ANSWER_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    response.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    response.once('error', reject);
  });
}

/** An image's name in a path as dockerode sends it (its `/`, `:` and `@` kept), with nothing else of it read as URL syntax. */
function pathPart(name: string): string {
  return encodeURIComponent(name).replace(/%2F/gi, '/').replace(/%3A/gi, ':').replace(/%40/gi, '@');
}

/** The reads over the engine's HTTP API at `connection` (what `findDockerEngine` found). */
export function createEngineReads(connection: DockerEngineEndpoint['connection']): EngineReads {
  const get = (path: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const options = 'socketPath' in connection ? { socketPath: connection.socketPath } : { host: connection.host, port: connection.port };
      const secure = 'protocol' in connection && connection.protocol === 'https';
      const send = builtin<typeof Http>(secure ? 'node:https' : 'node:http').request;
      const request = send({ ...options, path, method: 'GET', headers: { host: 'docker' } }, (response) => {
        readAnswer(response).then((body) => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(body);
          else reject(statusError(status, body));
        }, reject);
      });
      request.once('error', reject);
      request.end();
    });
  const getJson = async <T>(path: string): Promise<T> => JSON.parse(await get(path)) as T;
  return {
    ...('socketPath' in connection ? { socketPath: connection.socketPath } : {}),
    local: 'socketPath' in connection,
    ping: async () => void (await get('/_ping')),
    version: () => getJson('/version'),
    info: () => getJson('/info'),
    listContainers: (labels) => getJson(`/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: labels }))}`),
    inspectContainer: (nameOrId) => getJson(`/containers/${encodeURIComponent(nameOrId)}/json`),
    inspectImage: (name) => getJson(`/images/${pathPart(name)}/json`),
  };
}

/** The same reads through a dockerode client the caller already has (a `docker` option, Podman's). */
export function dockerodeReads(docker: Dockerode): EngineReads {
  // A socket path, or dockerode's finder of the default socket (a function) when none was given.
  const socketPath = (docker.modem as { socketPath?: unknown } | undefined)?.socketPath;
  return {
    ...(typeof socketPath === 'string' ? { socketPath } : {}),
    local: socketPath !== undefined,
    ping: async () => void (await docker.ping()),
    version: () => docker.version(),
    info: () => docker.info() as Promise<Record<string, unknown>>,
    listContainers: (labels) => docker.listContainers({ all: true, filters: { label: [...labels] } }),
    inspectContainer: (nameOrId) => docker.getContainer(nameOrId).inspect(),
    inspectImage: (name) => docker.getImage(name).inspect(),
  };
}
