import type net from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { CertificateAuthority } from './certificate-authority.js';
import { canonicalHost } from './host-patterns.js';
import type { RefusalLog } from './refusal-log.js';

/** New host certificates one sandbox may cause: a burst, then so many a second (issue 37: 1,010 names in 25 s slowed everyone). */
const NEW_HOSTS_BURST = 32;
const NEW_HOSTS_PER_SECOND = 2;

/** What the proxy needs to end a sandbox's TLS to an approved host. */
export interface TlsTerminator {
  /**
   * Ends the TLS a sandbox opened through CONNECT to `host` (whose first bytes, `first`, were
   * read already), with a certificate for that host; resolves with the TLS socket once the
   * handshake is done, or undefined when it failed or was refused (logged; `socket` destroyed).
   */
  terminate(socket: net.Socket, first: Buffer, tunnel: { sandbox: string; host: string; ca: CertificateAuthority }): Promise<tls.TLSSocket | undefined>;
}

/**
 * `socket` as a stream that gives `first` (already read from it) before the rest. A TLS socket
 * made over a net.Socket reads the socket's handle directly and would miss bytes read before; over
 * this stream it reads through JavaScript, back-pressure included.
 */
function carrying(socket: net.Socket, first: Buffer): Duplex {
  const stream = new Duplex({
    read: () => void socket.resume(),
    write: (chunk: Buffer, _encoding, callback) => void socket.write(chunk, callback),
    final: (callback) => {
      socket.end();
      callback();
    },
    destroy: (error, callback) => {
      socket.destroy();
      callback(error);
    },
  });
  if (first.length > 0) stream.push(first);
  socket.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.once('end', () => stream.push(null));
  socket.once('close', () => stream.destroy());
  socket.on('error', (error) => stream.destroy(error));
  socket.resume();
  return stream;
}

/**
 * Ends sandboxes' TLS for the hosts a variable is approved for (only those: TLS to any other
 * host is passed through unopened). Host certificates are signed off the event loop, kept by the
 * CA, and a sandbox that asks for many new names is refused past {@link NEW_HOSTS_BURST} and
 * {@link NEW_HOSTS_PER_SECOND}, so it cannot make the gateway sign for everyone's time.
 */
export function createTlsTerminator(options: { headersTimeoutMs: number; refusals: RefusalLog }): TlsTerminator {
  const budgets = new Map<string, { tokens: number; at: number }>();
  const mayIssue = (sandbox: string): boolean => {
    const now = Date.now();
    const budget = budgets.get(sandbox) ?? { tokens: NEW_HOSTS_BURST, at: now };
    budget.tokens = Math.min(NEW_HOSTS_BURST, budget.tokens + ((now - budget.at) / 1000) * NEW_HOSTS_PER_SECOND);
    budget.at = now;
    budgets.set(sandbox, budget);
    if (budgets.size > 4096) budgets.delete(budgets.keys().next().value!);
    if (budget.tokens < 1) return false;
    budget.tokens -= 1;
    return true;
  };
  // A host's TLS context, made once for each certificate the CA keeps.
  const contexts = new WeakMap<object, tls.SecureContext>();
  const contextOf = (leaf: { cert: string; key: string }): tls.SecureContext => {
    let context = contexts.get(leaf);
    if (!context) {
      context = tls.createSecureContext({ cert: leaf.cert, key: leaf.key });
      contexts.set(leaf, context);
    }
    return context;
  };

  return {
    async terminate(socket, first, tunnel) {
      if (!tunnel.ca.has(tunnel.host) && !mayIssue(tunnel.sandbox)) {
        options.refusals.warn(
          `certificates ${tunnel.sandbox}`,
          `berth: egress proxy: ${tunnel.sandbox} asks for new host names faster than ${NEW_HOSTS_PER_SECOND} a second; its connections to new ` +
            `names are dropped for now`,
        );
        socket.destroy();
        return undefined;
      }
      let context: tls.SecureContext;
      try {
        context = contextOf(await tunnel.ca.issue(tunnel.host));
      } catch {
        socket.destroy();
        return undefined;
      }
      if (socket.destroyed) return undefined;
      let mismatch: string | undefined;
      const secure = new tls.TLSSocket(carrying(socket, first), {
        isServer: true,
        ALPNProtocols: ['http/1.1'],
        SNICallback: (servername, callback) => {
          if (canonicalHost(servername) !== tunnel.host) {
            mismatch = servername;
            callback(new Error('SNI does not match CONNECT'));
            return;
          }
          callback(null, context);
        },
        // Without SNI, the host CONNECT named (the Host header is still checked).
        secureContext: context,
      });
      return new Promise((resolve) => {
        const handshake = setTimeout(() => secure.destroy(), options.headersTimeoutMs);
        secure.once('secure', () => {
          clearTimeout(handshake);
          resolve(secure);
        });
        secure.on('error', () => {
          clearTimeout(handshake);
          if (mismatch !== undefined) {
            options.refusals.warn(
              `sni ${tunnel.sandbox} ${tunnel.host} ${mismatch}`,
              `berth: egress proxy: ${tunnel.sandbox} connected for ${tunnel.host} but named ${mismatch.slice(0, 253)} in TLS; refused`,
            );
          }
          socket.destroy();
        });
        secure.once('close', () => {
          clearTimeout(handshake);
          resolve(undefined);
        });
      });
    },
  };
}
