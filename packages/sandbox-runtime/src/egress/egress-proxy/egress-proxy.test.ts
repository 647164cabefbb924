import https from 'node:https';
import type net from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import {
  A,
  apiPort,
  B,
  connectThrough,
  impostorPort,
  logs,
  placeholderA,
  placeholderB,
  proxyCa,
  request,
  STRANGER,
  TOKEN,
  upstreamCa,
  useProxy,
} from './proxy-fixture.js';
import { FORBIDDEN, received, type Seen, waitFor as vitestWaitFor } from './proxy-test-kit.js';

useProxy();

describe('the egress proxy', () => {
  it('puts the real value where credentials go for an approved host: Bearer, Proxy-Authorization, a named header, a named query parameter, Basic', async () => {
    const basic = Buffer.from(`x-access-token:${placeholderA}`).toString('base64');
    const answer = await request(A, 'api.github.test', `/repos?token=${placeholderA}&other=${placeholderA}`, {
      headers: { authorization: `Bearer ${placeholderA}`, 'x-api-key': placeholderA, 'proxy-authorization': `Basic ${basic}`, 'x-other': placeholderA },
    });
    expect(answer.status).toBe(200);
    // What the API saw; what came back to the sandbox is masked.
    const seen = received.at(-1)!;
    expect(answer.body).not.toContain(TOKEN);
    expect(seen.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen.headers['x-api-key']).toBe(TOKEN);
    expect(Buffer.from(String(seen.headers['proxy-authorization']).slice(6), 'base64').toString()).toBe(`x-access-token:${TOKEN}`);
    // Only the named parameter and headers: the rest keep the placeholder.
    expect(seen.url).toBe(`/repos?token=${TOKEN}&other=${placeholderA}`);
    expect(seen.headers['x-other']).toBe(placeholderA);
    expect(seen.servername).toBe('api.github.test');
    // The proxy's own framing, for a GET too.
    expect(seen.headers['content-length']).toBe('0');
    expect(logs.some((line) => line.includes('sandbox-a sent the placeholder of GITHUB_TOKEN to api.github.test'))).toBe(true);
    expect(logs.join('\n')).not.toContain(TOKEN);
    await request(A, 'raw.githubusercontent.test', '/file', { headers: { authorization: `Basic ${basic}` } });
    expect(Buffer.from(String(received.at(-1)!.headers.authorization).slice(6), 'base64').toString()).toBe(`x-access-token:${TOKEN}`);
  });

  it(
    "reads a host written in another case as the same host, for the check and the substitution alike (a case-variant host once bypassed a broker's " +
      'host check)',
    async () => {
      const answer = await request(A, 'API.GitHub.TEST', '/cased', {
        headers: { host: 'Api.Github.Test', authorization: `Bearer ${placeholderA}` },
        servername: 'api.github.test',
      });
      expect(answer.status).toBe(200);
      expect(received.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`);
      // In allow-list mode the case changes nothing either way: listed stays listed, unlisted stays refused.
      expect((await request(B, 'ELSEWHERE.TEST', '/')).status).toBe(403);
      expect((await request(B, 'API.GITHUB.TEST', '/', { headers: { authorization: `Bearer ${placeholderB}` }, servername: 'api.github.test' })).status).toBe(
        200,
      );
      expect(received.at(-1)!.headers.authorization).toBe('Bearer ghp_B_token');
      // A value never goes to a host that only looks like the approved one in another case.
      await request(A, 'API.GITHUB.TEST.ELSEWHERE.TEST', '/', { headers: { authorization: `Bearer ${placeholderA}` }, trust: upstreamCa.certificatePem }).catch(
        () => undefined,
      );
      expect(received.filter((seen) => seen.headers.authorization === `Bearer ${TOKEN}` && seen.servername !== 'api.github.test')).toEqual([]);
    },
  );

  it('puts the placeholder back in a response header that echoes the value', async () => {
    const answer = await request(A, 'api.github.test', '/echo-header', { headers: { authorization: `Bearer ${placeholderA}` } });
    expect(answer.headers['x-echo']).toBe(`Bearer ${placeholderA}`);
    expect(JSON.stringify(answer.headers)).not.toContain(TOKEN);
  });

  it('passes TLS to a host no variable is approved for through unopened: the placeholder arrives as it was', async () => {
    const answer = await request(A, 'elsewhere.test', '/collect', { headers: { authorization: `Bearer ${placeholderA}` }, trust: upstreamCa.certificatePem });
    expect((JSON.parse(answer.body) as Seen).headers.authorization).toBe(`Bearer ${placeholderA}`);
    // The proxy's own certificate was never made for it.
    expect(proxyCa.has('elsewhere.test')).toBe(false);
  });

  it("never substitutes another sandbox's placeholder, and drops a credential of B's own where B's value goes", async () => {
    const foreign = await request(B, 'api.github.test', '/user', { headers: { authorization: `Bearer ${placeholderA}` } });
    expect((JSON.parse(foreign.body) as Seen).headers.authorization).toBeUndefined();
    await request(B, 'api.github.test', '/user', { headers: { authorization: `token ${placeholderB}`, 'x-own': placeholderB } });
    const seen = received.at(-1)!;
    expect(seen.headers.authorization).toBe('token ghp_B_token');
    expect(seen.headers['x-own']).toBe(placeholderB);
  });
  it("never carries two sandboxes' requests on one upstream connection", async () => {
    // Both tunnels stay open, so each sandbox's kept-alive upstream connection could be reused.
    const first = await connectThrough(A, `api.github.test:${apiPort}`);
    const second = await connectThrough(B, `api.github.test:${apiPort}`);
    const over = async (tunnel: { socket: net.Socket }): Promise<number[]> => {
      const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
      (agent as unknown as { createConnection: () => tls.TLSSocket }).createConnection = () => secure;
      const ports: number[] = [];
      for (let index = 0; index < 2; index++) {
        ports.push(
          await new Promise<number>((resolve, reject) => {
            https
              .get({ host: 'api.github.test', path: '/', agent }, (response) => {
                let body = '';
                response.on('data', (chunk: Buffer) => (body += chunk.toString()));
                response.on('end', () => resolve((JSON.parse(body) as Seen).upstreamPort));
              })
              .on('error', reject);
          }),
        );
      }
      agent.destroy();
      return ports;
    };
    const fromA = await over(first);
    const fromB = await over(second);
    // Each sandbox reuses its own connection; none of B's is A's.
    expect(fromA[0]).toBe(fromA[1]);
    expect(fromB.filter((port) => fromA.includes(port))).toEqual([]);
  });

  it("never reaches what the sandboxes' egress policy refuses: an address outright, or a name that resolves to one", async () => {
    const outright = await connectThrough(A, `${FORBIDDEN}:${apiPort}`);
    expect(outright.status).toBe(403);
    expect(outright.body).toContain('not reachable from sandboxes');
    const byName = await connectThrough(A, `metadata.test:${apiPort}`);
    expect(byName.status).toBe(502);
    expect(byName.body).toContain('resolves only to addresses sandboxes may not reach');
  });

  it('drops a connection from an address that is no sandbox', async () => {
    const tunnel = await connectThrough(STRANGER, `api.github.test:${apiPort}`);
    expect(tunnel.status).toBe(0);
    expect(logs.some((line) => line.includes(`a connection from ${STRANGER}, which is no sandbox`))).toBe(true);
  });

  it('in allow-list mode refuses an unlisted domain, a listed one on another port, a raw address, and a forged SNI; serves a listed one', async () => {
    expect((await request(B, 'elsewhere.test', '/')).status).toBe(403);
    const otherPort = await connectThrough(B, `api.github.test:22`);
    expect(otherPort.status).toBe(403);
    expect(otherPort.body).toContain('api.github.test:22 is not on this sandbox');
    const raw = await connectThrough(B, `127.0.0.1:${apiPort}`);
    expect(raw.status).toBe(403);
    expect(raw.body).toContain('addresses never are');
    // x.allowed.test is listed but no variable is approved for it: its TLS passes unopened.
    expect((await request(B, 'x.allowed.test', '/', { trust: upstreamCa.certificatePem })).status).toBe(200);
    // Unopened, its SNI must still be the listed name.
    await expect(request(B, 'x.allowed.test', '/', { trust: upstreamCa.certificatePem, servername: 'elsewhere.test' })).rejects.toThrow();
    expect(logs.some((line) => line.includes('sandbox-b connected for x.allowed.test but named elsewhere.test in TLS'))).toBe(true);
  });

  it('refuses a TLS name (SNI), a Host header or an absolute target that differs from the host CONNECT named', async () => {
    await expect(request(B, 'api.github.test', '/', { servername: 'elsewhere.test' })).rejects.toThrow();
    expect(logs.some((line) => line.includes('connected for api.github.test but named elsewhere.test in TLS'))).toBe(true);
    const forged = await request(B, 'api.github.test', '/', { headers: { host: 'elsewhere.test' } });
    expect(forged.status).toBe(421);
    expect(forged.body).toContain('does not name api.github.test');
    // An absolute target naming another host, over the approved host's tunnel, is refused too.
    const elsewhere = await request(A, 'api.github.test', `https://elsewhere.test/?t=${placeholderA}`);
    expect(elsewhere.status).toBe(421);
    // One naming the same host and port goes on in origin form, substituted.
    await request(A, 'api.github.test', `https://api.github.test:${apiPort}/x?token=${placeholderA}`);
    expect(received.at(-1)!.url).toBe(`/x?token=${TOKEN}`);
  });

  it('verifies the upstream certificate: a host whose certificate nobody trusts gets a 502, never the request', async () => {
    const answer = await request(A, 'api.github.test', '/', { port: impostorPort, headers: { authorization: `Bearer ${placeholderA}` } });
    expect(answer.status).toBe(502);
    expect(answer.body).toMatch(/could not reach api\.github\.test/);
  });

  it('passes a WebSocket-style upgrade through, with the placeholder substituted in its head and the answer masked', async () => {
    const tunnel = await connectThrough(A, `api.github.test:${apiPort}`);
    const secure = tls.connect({ socket: tunnel.socket, servername: 'api.github.test', ca: proxyCa.certificatePem });
    await new Promise((resolve) => secure.once('secureConnect', resolve));
    secure.write(`GET /socket HTTP/1.1\r\nHost: api.github.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\nAuthorization: Bearer ${placeholderA}\r\n\r\n`);
    let received = '';
    secure.setEncoding('utf8');
    secure.on('data', (chunk: string) => (received += chunk));
    await vitestWaitFor(() => received.includes('\r\n\r\n'));
    expect(received).toMatch(/^HTTP\/1\.1 101/);
    expect(received).toContain(`x-seen-authorization: Bearer ${placeholderA}`);
    expect(received).not.toContain(TOKEN);
    secure.write('ping-through-the-tunnel');
    await vitestWaitFor(() => received.includes('ping-through-the-tunnel'));
    secure.destroy();
  });
});
