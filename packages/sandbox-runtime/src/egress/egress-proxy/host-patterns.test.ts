import * as core from '@berth/core/driver';
import { describe, expect, it } from 'vitest';
import { canonicalHost, formatHostPattern, hostMatches, parseHostPattern } from './host-patterns.js';
import { parseAuthority } from './parse-authority.js';

// What a pattern covers and which patterns are refused is tested with the rule itself, in
// @berth/core (src/host-pattern.test.ts). Here: that the proxy reads that one rule, and how it
// applies it to the names a sandbox sends it (a CONNECT target, a URL's authority, a Host header,
// a TLS server name), each read by parseAuthority or canonicalHost before any pattern is asked.
describe('host patterns, as the egress proxy applies them', () => {
  it("are core's own functions, so the config check and the proxy cannot disagree", () => {
    expect(parseHostPattern).toBe(core.parseHostPattern);
    expect(hostMatches).toBe(core.hostMatches);
    expect(canonicalHost).toBe(core.canonicalHost);
    expect(formatHostPattern).toBe(core.formatHostPattern);
  });

  it('match the host of a target in any case, with a trailing dot, whatever its port', () => {
    const patterns = ['api.example.com', '*.files.example.net'].map((text) => parseHostPattern(text));
    expect(patterns.map(formatHostPattern)).toEqual(['api.example.com', '*.files.example.net']);
    for (const authority of ['api.example.com:443', 'API.Example.COM.:443', 'raw.files.example.net', 'a.b.Files.Example.NET:8443']) {
      const target = parseAuthority(authority, 443);
      expect(target, authority).toBeDefined();
      expect(hostMatches(target!.host, patterns), authority).toBe(true);
    }
    expect(parseAuthority('API.Example.COM.:8443', 443)).toEqual({ host: 'api.example.com', port: 8443 });
    expect(parseAuthority('api.example.com', 80)).toEqual({ host: 'api.example.com', port: 80 });
  });

  it("match neither a wildcard's own domain nor a name that only looks like a listed one", () => {
    const patterns = ['api.example.com', '*.files.example.net'].map((text) => parseHostPattern(text));
    for (const authority of ['files.example.net:443', 'api.example.com.evil.test:443', 'evilapi.example.com', 'example.com', 'files.example.net.evil.test']) {
      const target = parseAuthority(authority, 443);
      expect(target, authority).toBeDefined();
      expect(hostMatches(target!.host, patterns), authority).toBe(false);
    }
  });

  it('never match an address a sandbox connects to: it stays an address, which no pattern is', () => {
    const patterns = [parseHostPattern('api.example.com')];
    for (const [authority, address] of [
      ['93.184.216.34:443', '93.184.216.34'],
      ['[2606:2800:220:1::25c8]:443', '2606:2800:220:1::25c8'],
      ['[::1]', '::1'],
    ] as const) {
      expect(parseAuthority(authority, 443), authority).toEqual({ host: address, port: 443 });
      expect(canonicalHost(address), authority).toBeUndefined();
      expect(hostMatches(address, patterns), authority).toBe(false);
    }
  });

  it('leave a target that names no host, or a port out of range, unread, before any pattern is asked', () => {
    for (const authority of [
      '',
      'api.example.com:0',
      'api.example.com:65536',
      'api.example.com:443:1',
      'api_example.com:443',
      '-api.example.com',
      'user@api.example.com',
    ]) {
      expect(parseAuthority(authority, 443), authority).toBeUndefined();
    }
  });

  it('read a TLS server name to the form the CONNECT target was read in, so the two agree whatever case the client wrote', () => {
    const target = parseAuthority('Api.Example.com:443', 443)!;
    expect(canonicalHost('API.EXAMPLE.COM.')).toBe(target.host);
    expect(canonicalHost('api.example.org')).not.toBe(target.host);
    // An address as the server name names no host, so it never agrees with a target.
    expect(canonicalHost('10.0.0.1')).toBeUndefined();
  });
});
