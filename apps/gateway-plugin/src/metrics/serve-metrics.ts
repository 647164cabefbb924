import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BerthError, ConfigError, type HostLogger, type ListenAddress } from '@berth/core';

/** How long a scrape may take, headers included; Prometheus' own default timeout is 10 s. */
const REQUEST_TIMEOUT_MS = 10_000;
/** How long an idle keep-alive connection stays open. */
const KEEP_ALIVE_MS = 5_000;

/** What {@link serveMetrics} serves: the text and its content type (`RuntimeMetrics`). */
export interface MetricsSource {
  text(): Promise<string>;
  readonly contentType: string;
}

/** A metrics listener that runs. */
export interface MetricsListener {
  /** The URL it serves, with the port the system gave when 0 was asked. */
  readonly url: string;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

/** The address as a URL's host part (an IPv6 address in brackets). */
const hostPart = (host: string): string => (host.includes(':') ? `[${host}]` : host);

/**
 * Serves `GET /metrics` (and `HEAD`) over HTTP at `address`: 404 on any other path, 405 on any
 * other method. No request body is read and every request is bounded in time, so a client
 * cannot hold the gateway's memory or its sockets; a scrape that fails is a 500 and a log line.
 */
export async function serveMetrics(options: {
  readonly metrics: MetricsSource;
  readonly address: ListenAddress;
  /** Where the address was given, named when it cannot be listened on: a `terminal.` key makes the failure a `ConfigError`. */
  readonly setting: string;
  readonly logger?: HostLogger;
}): Promise<MetricsListener> {
  const { metrics, logger } = options;
  const answer = (response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void => {
    response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
    response.end(body);
  };
  const server = createServer(
    { requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: REQUEST_TIMEOUT_MS, keepAliveTimeout: KEEP_ALIVE_MS },
    (request: IncomingMessage, response) => {
      // A body is never read: the connection closes after the answer instead of draining it.
      if (request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined) response.shouldKeepAlive = false;
      const path = (request.url ?? '').split('?')[0];
      if (path !== '/metrics') return answer(response, 404, 'not found; metrics are at /metrics\n');
      if (request.method !== 'GET' && request.method !== 'HEAD') return answer(response, 405, 'only GET /metrics\n', { allow: 'GET, HEAD' });
      metrics.text().then(
        (text) => answer(response, 200, request.method === 'HEAD' ? '' : text, { 'content-type': metrics.contentType }),
        (error: unknown) => {
          logger?.warn(`berth: the metrics could not be read: ${error instanceof Error ? error.message : String(error)}`);
          answer(response, 500, 'the metrics could not be read; see the gateway log\n');
        },
      );
    },
  );
  server.maxHeadersCount = 32;
  const shown = `${hostPart(options.address.host)}:${options.address.port}`;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const why = error.code === 'EADDRINUSE' ? 'the address is in use' : error.code === 'EACCES' ? 'permission denied' : error.message;
      const message = `${options.setting}: cannot serve metrics on ${shown}: ${why} (${error.code ?? 'error'}); give another address`;
      reject(
        options.setting.startsWith('terminal.')
          ? new ConfigError(options.setting, message, { cause: error })
          : new BerthError('METRICS_LISTEN_FAILED', message, { cause: error }),
      );
    });
    server.listen(options.address.port, options.address.host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  return {
    url: `http://${hostPart(options.address.host)}:${bound.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
