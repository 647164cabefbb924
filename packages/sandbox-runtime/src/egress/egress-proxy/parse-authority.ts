import net from 'node:net';
import { canonicalHost } from './host-patterns.js';

/**
 * `host:port` of a CONNECT target, a URL's authority or a Host header: the host canonical (a
 * name: lower case, no trailing dot) or bare (an address); undefined when it is neither, or the
 * port is out of range.
 */
export function parseAuthority(authority: string, defaultPort: number): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(authority.trim());
  if (!match) return undefined;
  const port = match[2] === undefined ? defaultPort : Number(match[2]);
  if (!(port > 0 && port < 65536)) return undefined;
  const bare = match[1]!.replace(/^\[|\]$/g, '');
  if (net.isIP(bare)) return { host: bare, port };
  const host = canonicalHost(bare);
  return host === undefined ? undefined : { host, port };
}
