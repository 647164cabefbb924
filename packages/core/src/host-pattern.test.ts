import { describe, expect, it } from 'vitest';
import { canonicalHost, formatHostPattern, hostMatches, parseHostPattern } from './host-pattern.js';

describe('host patterns', () => {
  it('match a host exactly, or the hosts below a "*." domain but not the domain itself, in any case and with a trailing dot', () => {
    const patterns = [parseHostPattern('api.github.com'), parseHostPattern('*.githubusercontent.com')];
    expect(hostMatches('API.GitHub.com.', patterns)).toBe(true);
    expect(hostMatches('raw.githubusercontent.com', patterns)).toBe(true);
    expect(hostMatches('a.b.githubusercontent.com', patterns)).toBe(true);
    expect(hostMatches('githubusercontent.com', patterns)).toBe(false);
    expect(hostMatches('api.github.com.evil.test', patterns)).toBe(false);
    expect(hostMatches('evilapi.github.com', patterns)).toBe(false);
    expect(hostMatches('xgithubusercontent.com', patterns)).toBe(false);
  });

  it('never match an address, and refuse addresses, ports, stray wildcards and whole top-level domains in one line', () => {
    expect(hostMatches('140.82.112.6', [parseHostPattern('api.github.com')])).toBe(false);
    for (const bad of ['10.0.0.1', 'api.github.com:443', 'api.*.com', '*', '*.com', '', 'exa mple.com', '[::1]']) {
      expect(() => parseHostPattern(bad), bad).toThrow(/^[^\n]+$/);
    }
    expect(() => parseHostPattern('10.0.0.1')).toThrow(
      'not a host name or "*.domain" pattern (an address, a port or a "*" elsewhere is not allowed); write it like "api.github.com" or "*.githubusercontent.com"',
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
    expect(parseHostPattern('*.GitHubUserContent.com')).toEqual({ below: 'githubusercontent.com' });
    expect(formatHostPattern(parseHostPattern('*.GitHubUserContent.com.'))).toBe('*.githubusercontent.com');
    expect(formatHostPattern(parseHostPattern('API.github.com'))).toBe('api.github.com');
  });
});
