import http from 'node:http';
import { EngineUnavailableError } from '@berth/core';
import type { EngineEndpoint } from './find-engine.js';

/** The answer of one engine API call. */
export interface EngineResponse {
  readonly status: number;
  readonly body: string;
}

/**
 * Calls the engine's Docker-compatible HTTP API (Docker and Podman both serve it): the tests'
 * own view of the engine, from outside Berth. Berth itself reaches engines only through its
 * backends.
 */
export function requestEngine(
  endpoint: EngineEndpoint,
  method: 'GET' | 'POST' | 'DELETE',
  requestPath: string,
  options: { timeoutMs?: number; onData?: (chunk: string) => void } = {},
): Promise<EngineResponse> {
  return new Promise((resolve, reject) => {
    const url = endpoint.url ? new URL(requestPath, endpoint.url) : undefined;
    const request = http.request(
      {
        method,
        ...(endpoint.socketPath ? { socketPath: endpoint.socketPath, path: requestPath, host: 'localhost' } : {}),
        ...(url ? { hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}` } : {}),
        timeout: options.timeoutMs ?? 10_000,
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          options.onData?.(chunk);
          // Keep the head only: a pull streams progress for minutes, and we need its last error.
          body = body.length < 65_536 ? body + chunk : body.slice(-32_768) + chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${options.timeoutMs ?? 10_000} ms`)));
    request.on('error', (error) =>
      reject(
        new EngineUnavailableError(
          endpoint.display,
          `cannot reach the ${endpoint.engine} engine at ${endpoint.display} (${(error as NodeJS.ErrnoException).code ?? error.message}); start it or set ${endpoint.engine === 'podman' ? 'CONTAINER_HOST' : 'DOCKER_HOST'}`,
          { cause: error },
        ),
      ),
    );
    request.end();
  });
}

/** What the engine says about itself. */
export interface EngineVersion {
  readonly version: string;
  readonly apiVersion: string;
  /** `Docker Engine - Community`, `Podman Engine`, ... or the engine kind when it does not say. */
  readonly product: string;
}

/** The engine's `/version`; throws `EngineUnavailableError` when it does not answer. */
export async function engineVersion(endpoint: EngineEndpoint): Promise<EngineVersion> {
  const response = await requestEngine(endpoint, 'GET', '/version', { timeoutMs: 5_000 });
  if (response.status !== 200) {
    throw new EngineUnavailableError(
      endpoint.display,
      `the engine at ${endpoint.display} answered /version with HTTP ${response.status}; check that it is a Docker or Podman API socket`,
    );
  }
  const parsed = JSON.parse(response.body) as { Version?: string; ApiVersion?: string; Platform?: { Name?: string }; Components?: Array<{ Name?: string }> };
  // Podman lists "Podman Engine" among its components; Docker calls its own just "Engine".
  const product = parsed.Components?.find((component) => /podman/i.test(component.Name ?? '')) ? 'Podman' : 'Docker';
  return { version: parsed.Version ?? 'unknown', apiVersion: parsed.ApiVersion ?? 'unknown', product };
}

/** Whether `image` is present on the engine (never pulls). */
export async function imageExists(endpoint: EngineEndpoint, image: string): Promise<boolean> {
  const response = await requestEngine(endpoint, 'GET', `/images/${encodeURIComponent(image)}/json`, { timeoutMs: 5_000 });
  if (response.status === 200) return true;
  if (response.status === 404) return false;
  throw new EngineUnavailableError(endpoint.display, `the engine at ${endpoint.display} answered the image check for ${image} with HTTP ${response.status}`);
}

/**
 * Pulls `image`, calling `onProgress` with one-line status texts. Resolves `true` when the image
 * is present afterwards, `false` when the registry could not provide it.
 */
export async function pullImage(endpoint: EngineEndpoint, image: string, onProgress?: (line: string) => void): Promise<boolean> {
  const at = image.lastIndexOf(':');
  const hasTag = at > image.lastIndexOf('/');
  const name = hasTag ? image.slice(0, at) : image;
  const tag = hasTag ? image.slice(at + 1) : 'latest';
  let pending = '';
  await requestEngine(endpoint, 'POST', `/images/create?fromImage=${encodeURIComponent(name)}&tag=${encodeURIComponent(tag)}`, {
    timeoutMs: 600_000,
    onData: (chunk) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        try {
          const event = JSON.parse(line) as { status?: string; progress?: string; id?: string };
          if (event.status) onProgress?.([event.id, event.status, event.progress].filter(Boolean).join(' '));
        } catch {
          // A partial or non-JSON line carries no progress worth showing.
        }
      }
    },
  });
  return imageExists(endpoint, image);
}
