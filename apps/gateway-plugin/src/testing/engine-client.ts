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
  options: { timeoutMs?: number } = {},
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
        // Whole: a container listing on an engine others use too runs past 64 KiB.
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${options.timeoutMs ?? 10_000} ms`)));
    request.on('error', (error) =>
      reject(
        new EngineUnavailableError(
          endpoint.display,
          `cannot reach the ${endpoint.engine} engine at ${endpoint.display} (${(error as NodeJS.ErrnoException).code ?? error.message}); ` +
            `start it or set ${endpoint.engine === 'podman' ? 'CONTAINER_HOST' : 'DOCKER_HOST'}`,
          { cause: error },
        ),
      ),
    );
    request.end();
  });
}
