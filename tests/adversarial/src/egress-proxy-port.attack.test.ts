import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EGRESS_PROXY_PORT, egressRuleset } from '@berth/sandbox-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The egress proxy's port in the pool's firewall table (egress-rulesets.ts): a sandbox reaches
// port 3129 of its own network's gateway only where a socket is bound to that very address (the
// egress proxy binds each gateway by itself), never a host service listening on every address
// where no proxy runs (issue 37). Needs root, ip and nft, as the attack suite does; no engine.

describe(`port ${EGRESS_PROXY_PORT} of a sandbox network's gateway`, () => {
  // The pool's real ruleset, in a network namespace standing in for the host (nftables tables
  // are per namespace), and another for a sandbox on the pool: what listens on the "host" is
  // then the test's alone, and no proxy of another test is in the way.
  const tag = randomBytes(3).toString('hex');
  const [host, sandbox] = [`bth-h-${tag}`, `bth-s-${tag}`];
  const pool = '10.254.37.0/29';
  const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8' });
  const inHost = (command: string, args: string[], input?: string): string =>
    execFileSync('ip', ['netns', 'exec', host, command, ...args], { encoding: 'utf8', input });

  beforeAll(() => {
    ip('netns', 'add', host);
    ip('netns', 'add', sandbox);
    ip('link', 'add', `vh${tag}`, 'netns', host, 'type', 'veth', 'peer', 'name', `vs${tag}`, 'netns', sandbox);
    inHost('ip', ['addr', 'add', '10.254.37.1/29', 'dev', `vh${tag}`]);
    inHost('ip', ['link', 'set', `vh${tag}`, 'up']);
    ip('netns', 'exec', sandbox, 'ip', 'addr', 'add', '10.254.37.2/29', 'dev', `vs${tag}`);
    ip('netns', 'exec', sandbox, 'ip', 'link', 'set', `vs${tag}`, 'up');
    inHost('nft', ['-f', '-'], egressRuleset({ pool, resolvers: [] }));
  });

  afterAll(() => {
    for (const namespace of [host, sandbox]) {
      try {
        ip('netns', 'del', namespace);
      } catch {
        // Not made.
      }
    }
  });

  /** Whether the "sandbox" connects to the gateway's port while something in the "host" listens on `address`. */
  const reachedWith = (address: string): string => {
    const listener = `require("net").createServer((s) => s.end()).listen(${EGRESS_PROXY_PORT}, "${address}"); setTimeout(() => process.exit(0), 4000)`;
    const probe =
      `const s = require("net").connect(${EGRESS_PROXY_PORT}, "10.254.37.1"); s.on("connect", () => { console.log("connected"); process.exit(0); ` +
      '}); s.on("error", (e) => { console.log(e.code); process.exit(0); }); setTimeout(() => { console.log("timeout"); process.exit(0); }, 2000)';
    return execFileSync(
      'sh',
      ['-c', `ip netns exec ${host} "${process.execPath}" -e '${listener}' & sleep 0.5; ip netns exec ${sandbox} "${process.execPath}" -e '${probe}'; wait`],
      { encoding: 'utf8' },
    ).trim();
  };

  it('is closed where a host service listens on every address (no proxy there), and open where a proxy listens on the gateway itself', () => {
    expect(reachedWith('0.0.0.0')).not.toBe('connected');
    expect(reachedWith('10.254.37.1')).toBe('connected');
  });
});
