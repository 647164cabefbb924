import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { A, apiPort, B, connectThrough, proxy, proxyCa, proxyPort, request, useProxy } from './proxy-fixture.js';
import { over, waitFor as vitestWaitFor } from './proxy-test-kit.js';

// The proxy's connections (the same proxy as egress-proxy.test.ts's): a large download, slow and
// reset clients, the listeners.
useProxy();

describe('the egress proxy', () => {
  it('streams a large download without holding it: 64 MiB arrive whole while the heap stays small', async () => {
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    const heapBefore = process.memoryUsage().heapUsed;
    let peak = heapBefore;
    const bytes = 64 * 1024 * 1024;
    const received = await new Promise<number>((resolve, reject) => {
      const call = https.request({ host: 'api.github.test', path: `/download?bytes=${bytes}`, agent: over(secure) }, (response) => {
        let count = 0;
        response.on('data', (chunk: Buffer) => {
          count += chunk.length;
          if (count % (8 * 1024 * 1024) < chunk.length) peak = Math.max(peak, process.memoryUsage().heapUsed);
        });
        response.on('end', () => resolve(count));
      });
      call.on('error', reject);
      call.end();
    });
    expect(received).toBe(bytes);
    // The proxy, the fake API and the client share this process: a buffered body would be 64 MiB more.
    expect(peak - heapBefore).toBeLessThan(32 * 1024 * 1024);
  });

  it('drops a client that never finishes its request (slowloris) and holds one sandbox to its connection limit, while another is served', async () => {
    const slow = net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: A });
    slow.write('CONNECT api.github.test');
    slow.resume();
    const hoarded = Array.from({ length: 12 }, () => net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: A }));
    await Promise.all(hoarded.map((socket) => new Promise((resolve) => socket.once('connect', resolve))));
    // B is served whatever A does.
    expect((await request(B, 'api.github.test', '/user')).status).toBe(200);
    await vitestWaitFor(() => slow.destroyed || slow.readableEnded, 10_000);
    const open = proxy.connections().get('sandbox-a') ?? 0;
    expect(open).toBeLessThanOrEqual(8);
    for (const socket of hoarded) socket.destroy();
    slow.destroy();
  });
  it('survives clients that reset their connection after a refusal, after a tunnel opened, and inside TLS', async () => {
    const reset = async (write: string, after: 'answer' | 'at once'): Promise<void> => {
      const socket = net.connect({ host: '127.0.0.1', port: proxyPort, localAddress: A });
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(write);
      if (after === 'answer') await new Promise((resolve) => socket.once('data', resolve));
      socket.resetAndDestroy();
    };
    await reset('CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n', 'answer');
    await reset('CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n', 'at once');
    await reset(`CONNECT api.github.test:${apiPort} HTTP/1.1\r\nHost: api.github.test\r\n\r\n`, 'answer');
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    secure.on('error', () => undefined);
    await new Promise((resolve) => secure.once('secureConnect', resolve));
    tunnel.socket.resetAndDestroy();
    // Still serving (an uncaught error would also fail this file).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await request(B, 'api.github.test', '/user')).status).toBe(200);
  });

  it('drops a client that trickles its headers inside a TLS tunnel, as outside one', async () => {
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    expect(tunnel.status).toBe(200);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    await new Promise((resolve) => secure.once('secureConnect', resolve));
    secure.write('GET /user HTTP/1.1\r\nHost: api.github.test\r\n');
    secure.resume();
    const started = Date.now();
    // headersTimeoutMs is 1 s here; the idle timeout (2 minutes) must not be what ends it.
    await vitestWaitFor(() => secure.destroyed || secure.readableEnded, 10_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    secure.destroy();
  });

  it('listens on each address it is given, and on one no longer once told to stop', async () => {
    const port = await proxy.listen(0, '127.0.0.4');
    expect(await proxy.listen(port, '127.0.0.4')).toBe(port);
    expect(proxy.listening()).toEqual(expect.arrayContaining(['127.0.0.1', '127.0.0.4']));
    expect((await request(A, 'api.github.test', '/user', { through: port, at: '127.0.0.4' })).status).toBe(200);
    await proxy.unlisten('127.0.0.4');
    expect(proxy.listening()).not.toContain('127.0.0.4');
    const refused = await new Promise<string>((resolve) => {
      const socket = net.connect({ host: '127.0.0.4', port });
      socket.once('connect', () => resolve('connected'));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});
