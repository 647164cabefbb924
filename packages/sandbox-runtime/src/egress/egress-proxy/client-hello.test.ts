import net from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { ByteReader } from './byte-reader.js';
import { readClientHello } from './client-hello.js';

/** The first bytes a TLS client sends for `servername` (or none), read by the proxy's parser. */
async function helloOf(servername: string | undefined) {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const client = tls.connect({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port, ...(servername ? { servername } : {}) });
  client.on('error', () => undefined);
  const socket = await accepted;
  try {
    return await readClientHello(new ByteReader(socket), { wholeMs: 2_000 });
  } finally {
    client.destroy();
    socket.destroy();
    server.close();
  }
}

describe('reading the server name of a ClientHello', () => {
  it('finds the name a client asks for, or none, and keeps the bytes to pass on', async () => {
    const named = await helloOf('api.example.com');
    expect(named).toMatchObject({ name: 'api.example.com', malformed: false });
    expect(named.bytes[0]).toBe(0x16);
    expect(await helloOf(undefined)).toMatchObject({ name: undefined, malformed: false });
  });

  it('calls anything else malformed', async () => {
    const server = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
    const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1', () => client.write(Buffer.from([0x16, 3, 1, 0, 4, 2, 0, 0, 0])));
    const hello = await readClientHello(new ByteReader(await accepted), { wholeMs: 2_000 });
    expect(hello.malformed).toBe(true);
    client.destroy();
    server.close();
  });
});
