import { request } from 'node:http';
import { EngineUnavailableError, SandboxError } from '@berth/core';

/** The socket a rootful Podman API service listens on by default. */
export const ROOTFUL_PODMAN_SOCKET = '/run/podman/podman.sock';

/** Where a Podman API client talks: a Unix socket, or a TCP address from `CONTAINER_HOST`. */
export type PodmanEndpoint = { readonly socketPath: string } | { readonly host: string; readonly port: number; readonly protocol: 'http' };

/** One place discovery looks, and why it looked there. */
export interface PodmanCandidate {
  /** `CONTAINER_HOST`, `rootless` (`$XDG_RUNTIME_DIR/podman/podman.sock`) or `rootful` (`/run/podman/podman.sock`). */
  readonly source: 'CONTAINER_HOST' | 'rootless' | 'rootful';
  readonly endpoint: PodmanEndpoint;
}

/** The endpoint discovery settled on. */
export interface FoundPodmanSocket extends PodmanCandidate {
  /** The endpoint as text (a socket path or a URL), for messages. */
  readonly label: string;
}

/** What discovery reads; the process's own values by default. */
export interface FindPodmanSocketOptions {
  /** @default process.env */
  readonly environment?: NodeJS.ProcessEnv;
  /** The user id discovery runs as. @default process.getuid() */
  readonly uid?: number;
  /** How long one candidate may take to answer a ping. @default 2000 */
  readonly timeoutMs?: number;
  /** The rootful socket, last in line. @default '/run/podman/podman.sock' */
  readonly rootfulSocketPath?: string;
}

/** A candidate's endpoint as text, for messages. */
export function describeEndpoint(endpoint: PodmanEndpoint): string {
  return 'socketPath' in endpoint ? endpoint.socketPath : `${endpoint.protocol}://${endpoint.host}:${endpoint.port}`;
}

/** Parses a `CONTAINER_HOST` value (`unix:///path` or `tcp://host:port`); other schemes are refused with what to do instead. */
export function parseContainerHost(value: string): PodmanEndpoint {
  if (value.startsWith('unix://')) {
    const socketPath = value.slice('unix://'.length);
    if (!socketPath.startsWith('/'))
      throw new SandboxError('CONTAINER_HOST_INVALID', `CONTAINER_HOST ${value} does not name an absolute socket path; use unix:///path/to/podman.sock`);
    return { socketPath };
  }
  if (value.startsWith('tcp://')) {
    const url = new URL(value.replace(/^tcp:\/\//, 'http://'));
    return { host: url.hostname, port: Number(url.port || 8080), protocol: 'http' };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value)?.[1] ?? 'none';
  throw new SandboxError(
    'CONTAINER_HOST_INVALID',
    `CONTAINER_HOST uses the scheme ${scheme}, which Berth does not speak; ` +
      'forward the remote socket to a local one (ssh -L) and set CONTAINER_HOST to unix:///that/socket',
  );
}

/** The rootless socket of the user `uid`: `$XDG_RUNTIME_DIR/podman/podman.sock`, else `/run/user/<uid>/podman/podman.sock`. */
export function rootlessSocketPath(environment: NodeJS.ProcessEnv, uid: number | undefined): string | undefined {
  const runtimeDirectory = environment.XDG_RUNTIME_DIR || (uid !== undefined && uid !== 0 ? `/run/user/${uid}` : undefined);
  return runtimeDirectory ? `${runtimeDirectory.replace(/\/+$/, '')}/podman/podman.sock` : undefined;
}

/** The places discovery tries, in order: `CONTAINER_HOST`, the rootless socket, the rootful socket. */
export function podmanCandidates(
  environment: NodeJS.ProcessEnv = process.env,
  uid: number | undefined = process.getuid?.(),
  rootfulSocketPath = ROOTFUL_PODMAN_SOCKET,
): PodmanCandidate[] {
  const candidates: PodmanCandidate[] = [];
  if (environment.CONTAINER_HOST) candidates.push({ source: 'CONTAINER_HOST', endpoint: parseContainerHost(environment.CONTAINER_HOST) });
  const rootless = rootlessSocketPath(environment, uid);
  if (rootless && rootless !== rootfulSocketPath) candidates.push({ source: 'rootless', endpoint: { socketPath: rootless } });
  candidates.push({ source: 'rootful', endpoint: { socketPath: rootfulSocketPath } });
  return candidates;
}

/** The one command that starts the API service where discovery would find it for this user. */
export function podmanServiceCommand(environment: NodeJS.ProcessEnv = process.env, uid: number | undefined = process.getuid?.()): string {
  const rootless = uid === 0 ? undefined : rootlessSocketPath(environment, uid);
  return `podman system service --time=0 unix://${rootless ?? ROOTFUL_PODMAN_SOCKET}`;
}

/** Sends `GET /_ping`; resolves when the endpoint answers 200 `OK`, else rejects with why. */
export function pingPodman(endpoint: PodmanEndpoint, timeoutMs = 2000): Promise<void> {
  return new Promise((resolve, reject) => {
    const target = 'socketPath' in endpoint ? { socketPath: endpoint.socketPath } : { host: endpoint.host, port: endpoint.port };
    const call = request({ ...target, path: '/_ping', method: 'GET', timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8').trim();
        if (response.statusCode === 200) resolve();
        else reject(new Error(`answered ${response.statusCode ?? 'nothing'}${body ? ` ${body.slice(0, 80)}` : ''}`));
      });
      response.on('error', reject);
    });
    call.on('timeout', () => call.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
    call.on('error', reject);
    call.end();
  });
}

/**
 * Finds a Podman API service: `CONTAINER_HOST`, then the rootless socket, then the rootful one;
 * the first that answers a ping wins. Throws `EngineUnavailableError` naming every endpoint tried
 * (and why each failed) and the command that starts the service.
 */
export async function findPodmanSocket(options: FindPodmanSocketOptions = {}): Promise<FoundPodmanSocket> {
  const environment = options.environment ?? process.env;
  const uid = options.uid ?? process.getuid?.();
  const tried: string[] = [];
  for (const candidate of podmanCandidates(environment, uid, options.rootfulSocketPath)) {
    const label = describeEndpoint(candidate.endpoint);
    try {
      await pingPodman(candidate.endpoint, options.timeoutMs ?? 2000);
      return { ...candidate, label };
    } catch (error) {
      const reason = (error as { code?: unknown }).code ?? (error as Error).message;
      tried.push(`${label} (${candidate.source}: ${String(reason)})`);
    }
  }
  throw new EngineUnavailableError(
    tried.map((entry) => entry.split(' (')[0]).join(', '),
    `no Podman API service answers; tried ${tried.join(', ')}; ` +
      `start one with \`${podmanServiceCommand(environment, uid)}\`, or set CONTAINER_HOST to a running one`,
  );
}
