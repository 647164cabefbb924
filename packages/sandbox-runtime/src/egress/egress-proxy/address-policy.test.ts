import { describe, expect, it } from 'vitest';
import { createAddressPolicy } from './address-policy.js';

// The egress policy as the proxy applies it to its own connections: the firewall's rules, in the
// firewall's order (egress-rulesets.ts), so the proxy never reaches for a sandbox what the
// sandbox itself could not.

describe("the egress proxy's address policy", () => {
  const policy = (exceptions: Array<{ cidr: string; port?: number; learned?: true }> = []) =>
    createAddressPolicy({ pool: '10.217.0.0/16', exceptions: () => exceptions, localAddresses: () => ['192.0.2.10', '127.0.0.1'] });

  it('lets the internet through and refuses private, loopback, metadata, the pool and the host', () => {
    const allows = policy();
    expect(allows('140.82.112.6', 443)).toBe(true);
    expect(allows('::ffff:140.82.112.6', 443)).toBe(true);
    for (const address of [
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '127.0.0.1',
      '169.254.169.254',
      '10.217.0.2',
      '192.0.2.10',
      '224.0.0.1',
      '0.0.0.0',
    ]) {
      expect(allows(address, 443), address).toBe(false);
    }
    // No IPv6 from a sandbox, so none through the proxy either.
    expect(allows('2606:4700::1111', 443)).toBe(false);
  });

  it("opens what the operator's exceptions open, and no more than the firewall does", () => {
    const allows = policy([
      { cidr: '10.0.0.0/8' },
      { cidr: '192.168.5.7/32', port: 5432 },
      { cidr: '169.254.0.0/16' },
      { cidr: '169.254.1.1/32' },
      { cidr: '192.0.2.0/24' },
    ]);
    expect(allows('10.9.9.9', 443)).toBe(true);
    expect(allows('192.168.5.7', 5432)).toBe(true);
    expect(allows('192.168.5.7', 22)).toBe(false);
    // A range never opens link-local or the host's own addresses; one naming the address does.
    expect(allows('169.254.169.254', 80)).toBe(false);
    expect(allows('169.254.1.1', 80)).toBe(true);
    expect(allows('192.0.2.10', 80)).toBe(false);
    // Nothing opens the pool (another sandbox).
    expect(policy([{ cidr: '10.217.0.2/32' }])('10.217.0.2', 80)).toBe(false);
    // An address a name resolved to opens as a range does: never link-local nor the host's own.
    expect(policy([{ cidr: '169.254.1.1/32', learned: true }])('169.254.1.1', 80)).toBe(false);
    expect(policy([{ cidr: '192.168.5.7/32', learned: true }])('192.168.5.7', 80)).toBe(true);
  });
});
