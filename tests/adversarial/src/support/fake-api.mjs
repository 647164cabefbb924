// A fake HTTPS API of the tests' own, run in a network namespace of theirs (stand-in-network.ts):
// `node fake-api.mjs certificates.json [address]`, where the file maps each host name it serves to a
// certificate and key of the tests' own CA. It prints its port, then one JSON line per request
// it receives: what arrived (the TLS name, the Host header, the target, every header), so a test
// reads what the egress proxy sent on. A UDP echo answers on the same port. Its answer never echoes the request: a test that reads
// the sandbox's side must see only what the sandbox could see anyway.
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';

const names = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const contexts = new Map(Object.entries(names).map(([name, pair]) => [name, tls.createSecureContext(pair)]));
const [fallback] = Object.values(names);

const server = https.createServer(
  {
    ...fallback,
    SNICallback: (servername, callback) => callback(null, contexts.get(servername) ?? null),
  },
  (request, response) => {
    request.resume();
    request.on('end', () => {
      const line = {
        sni: request.socket.servername ?? null,
        host: request.headers.host ?? null,
        method: request.method,
        target: request.url,
        headers: request.rawHeaders,
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
      const size = /^\/bytes\/(\d+)$/.exec(request.url ?? '')?.[1];
      if (size) {
        response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
        const chunk = Buffer.alloc(65536, 120);
        let left = Number(size);
        const pump = () => {
          while (left > 0) {
            const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
            left -= part.length;
            if (!response.write(part)) return response.once('drain', pump);
          }
          response.end();
        };
        return pump();
      }
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(`answered ${request.method} ${(request.url ?? '').split('?')[0]} for ${request.headers.host}\n`);
    });
  },
);
// A UDP echo on the same port (QUIC's), for the cases that try UDP past the proxy.
const echo = dgram.createSocket('udp4');
echo.on('message', (message, from) => echo.send(Buffer.concat([Buffer.from('echo '), message]), from.port, from.address));
// Bound to the API's own address (the third argument): an answer from the namespace's other
// address would match no flow of the sandbox's connected socket.
echo.bind(443, process.argv[3] ?? '0.0.0.0', () => server.listen(443, '0.0.0.0', () => process.stdout.write(`${server.address().port}\n`)));
