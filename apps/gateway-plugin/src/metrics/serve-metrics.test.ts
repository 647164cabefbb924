import net from 'node:net';
import { ConfigError } from '@berth/core';
import { createRuntimeMetrics } from '@berth/sandbox-runtime/metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { serveMetrics, type MetricsListener } from './serve-metrics.js';

// The metrics listener on a real loopback port: GET /metrics only, nothing else, bounded.
const listeners: MetricsListener[] = [];
afterEach(async () => {
  for (const listener of listeners.splice(0)) await listener.close();
});

async function start() {
  const metrics = createRuntimeMetrics();
  const listener = await serveMetrics({ metrics, address: { host: '127.0.0.1', port: 0 }, setting: 'berth serve --metrics' });
  listeners.push(listener);
  return { metrics, listener, base: listener.url.replace(/\/metrics$/, '') };
}

/** A line of the Prometheus text format: a comment, or a sample `name{labels} value`. */
const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (?:-?[0-9.e+-]+|NaN|[+-]Inf)$/;

describe('serveMetrics', () => {
  it('serves the metrics in the text format at /metrics, and they move with what the runtime observes', async () => {
    const { metrics, listener } = await start();
    const before = await fetch(listener.url);
    expect(before.status).toBe(200);
    expect(before.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await before.text();
    for (const line of text.split('\n').filter((candidate) => candidate !== '' && !candidate.startsWith('#'))) expect(line).toMatch(SAMPLE);
    expect(text).toContain('berth_exec_total{outcome="ran"} 0');

    metrics.observer.command({} as never, {} as never, { command: 'true', outcome: 'ran', exitCode: 0, durationMs: 12 });
    expect(await (await fetch(listener.url)).text()).toContain('berth_exec_total{outcome="ran"} 1');
  });

  it('answers 404 on any other path and 405 on any other method, reading no body', async () => {
    const { base, listener } = await start();
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/metrics/x`)).status).toBe(404);
    expect((await fetch(`${base}/metrics?name[]=berth_exec_total`)).status).toBe(200);
    const posted = await fetch(listener.url, { method: 'POST', body: 'x'.repeat(1_000_000) });
    expect(posted.status).toBe(405);
    expect(posted.headers.get('allow')).toBe('GET, HEAD');
  });

  it('refuses an address in use in one line naming it and what to do, and frees its port on close', async () => {
    const { listener } = await start();
    const port = Number(new URL(listener.url).port);
    const taken = (setting: string) =>
      serveMetrics({ metrics: createRuntimeMetrics(), address: { host: '127.0.0.1', port }, setting }).catch((caught: unknown) => caught);
    const error = await taken('berth serve --metrics');
    expect(error).toMatchObject({ code: 'METRICS_LISTEN_FAILED' });
    expect((error as Error).message).toBe(
      `berth serve --metrics: cannot serve metrics on 127.0.0.1:${port}: the address is in use (EADDRINUSE); give another address`,
    );
    // From the config, the key is what to change: a ConfigError naming it.
    expect(await taken('terminal.metrics_listen')).toBeInstanceOf(ConfigError);
    await listeners.splice(0)[0]!.close();
    const refused = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(socket.destroy() && false));
      socket.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
  });
});
