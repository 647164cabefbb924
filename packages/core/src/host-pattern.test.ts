import { describe, expect, it } from 'vitest';
import { canonicalHost, egressDomainMatches, formatHostPattern, hostMatches, parseEgressDomain, parseHostPattern } from './host-pattern.js';

describe('host patterns', () => {
  it('match a host exactly, or the hosts below a "*." domain but not the domain itself, in any case and with a trailing dot', () => {
    const patterns = [parseHostPattern('api.github.com'), parseHostPattern('*.example-cdn.com')];
    expect(hostMatches('API.GitHub.com.', patterns)).toBe(true);
    expect(hostMatches('raw.example-cdn.com', patterns)).toBe(true);
    expect(hostMatches('a.b.example-cdn.com', patterns)).toBe(true);
    expect(hostMatches('example-cdn.com', patterns)).toBe(false);
    expect(hostMatches('api.github.com.evil.test', patterns)).toBe(false);
    expect(hostMatches('evilapi.github.com', patterns)).toBe(false);
    expect(hostMatches('xexample-cdn.com', patterns)).toBe(false);
  });

  it('never match an address, and refuse addresses, ports, stray wildcards and whole top-level domains in one line', () => {
    expect(hostMatches('140.82.112.6', [parseHostPattern('api.github.com')])).toBe(false);
    for (const bad of ['10.0.0.1', 'api.github.com:443', 'api.*.com', '*', '*.com', '', 'exa mple.com', '[::1]']) {
      expect(() => parseHostPattern(bad), bad).toThrow(/^[^\n]+$/);
    }
    expect(() => parseHostPattern('10.0.0.1')).toThrow(
      'not a host name or "*.domain" pattern (an address, a port or a "*" elsewhere is not allowed); write it like "api.github.com" or "*.example.com"',
    );
    expect(() => parseHostPattern('*.com')).toThrow('covers a whole top-level domain; name the domain under it, like "*.example.com"');
    // A token pasted where its host belongs is refused, and never repeated in the message.
    for (const pasted of ['ghp_16C7e42F292c6912E7710c838347Ae178B4a', 'abcdef0123456789abcdef0123456789']) {
      let thrown = '';
      try {
        parseHostPattern(pasted);
      } catch (error) {
        thrown = (error as Error).message;
      }
      expect(thrown, pasted).not.toBe('');
      expect(thrown).not.toContain(pasted.slice(0, 12));
    }
  });

  it('are kept in canonical form: lower case, no trailing dot, written back as the operator would', () => {
    expect(canonicalHost(' API.GitHub.com. ')).toBe('api.github.com');
    expect(canonicalHost('10.0.0.1')).toBeUndefined();
    expect(parseHostPattern('*.Example-CDN.com')).toEqual({ below: 'example-cdn.com' });
    expect(formatHostPattern(parseHostPattern('*.Example-CDN.com.'))).toBe('*.example-cdn.com');
    expect(formatHostPattern(parseHostPattern('API.github.com'))).toBe('api.github.com');
  });

  it('refuse, in one line, a wildcard over a public suffix (the Public Suffix List, its private part too)', () => {
    for (const bad of ['*.github.io', '*.s3.amazonaws.com', '*.co.uk', '*.githubusercontent.com', '*.compute.amazonaws.com']) {
      expect(() => parseHostPattern(bad), bad).toThrow(/^covers a public suffix[^\n]+$/);
    }
    expect(parseHostPattern('*.pages.example.com')).toEqual({ below: 'pages.example.com' });
    expect(parseHostPattern('*.someone.github.io')).toEqual({ below: 'someone.github.io' });
    // An exact name that is a suffix is one host: allowed.
    expect(parseHostPattern('github.io')).toEqual({ exact: 'github.io' });
  });
});

describe('egress domains (docker_egress_domains)', () => {
  it('match by name and port: 443 and 80 unless the entry names its port', () => {
    const domains = [parseEgressDomain('api.github.com'), parseEgressDomain('git.example.com:22'), parseEgressDomain('*.example.org:8443')];
    expect(egressDomainMatches('API.github.com', 443, domains)).toBe(true);
    expect(egressDomainMatches('api.github.com', 80, domains)).toBe(true);
    expect(egressDomainMatches('api.github.com', 22, domains)).toBe(false);
    expect(egressDomainMatches('git.example.com', 22, domains)).toBe(true);
    expect(egressDomainMatches('git.example.com', 443, domains)).toBe(false);
    expect(egressDomainMatches('a.example.org', 8443, domains)).toBe(true);
    expect(egressDomainMatches('a.example.org', 443, domains)).toBe(false);
    expect(egressDomainMatches('140.82.112.6', 443, domains)).toBe(false);
  });

  it('refuse a bad port or an address in one line that does not repeat the entry', () => {
    for (const bad of ['api.github.com:0', 'api.github.com:65536', 'api.github.com:', 'api.github.com:x', '10.0.0.1:443', '*.github.io:443']) {
      expect(() => parseEgressDomain(bad), bad).toThrow(/^[^\n]+$/);
    }
    let thrown = '';
    try {
      parseEgressDomain('ghp_16C7e42F292c6912E7710c838347Ae178B4a:443');
    } catch (error) {
      thrown = (error as Error).message;
    }
    expect(thrown).not.toContain('ghp_16C7');
  });
});
