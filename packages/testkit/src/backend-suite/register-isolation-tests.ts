import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_TIMEOUT_MS, type BackendFixture } from './create-backend-fixture.js';
import { shellQuote } from './shell-quote.js';

/** Prints the sandbox's first non-loopback IPv4 address. */
const OWN_ADDRESS = `ip -4 addr show | awk '/inet / && $2 !~ /^127\\./ { sub(/\\/.*/, "", $2); print $2; exit }'`;

/** Registers the tests that two users see nothing of each other: files, variables, network endpoints. */
export function registerIsolationTests(fixture: BackendFixture): void {
  describe('isolation between users', () => {
    it("a user cannot read, list or find another user's files in /workspace and /root", { timeout: TEST_TIMEOUT_MS }, async () => {
      const tag = `iso-${fixture.runId}`;
      const write = (owner: string) =>
        `echo ${owner}-work-${tag} > /workspace/${tag}-${owner}.txt && ` +
        `echo ${owner}-home-${tag} > /root/${tag}-${owner}.txt && cat /workspace/${tag}-${owner}.txt /root/${tag}-${owner}.txt`;
      expect(await fixture.run('alice', write('alice'))).toMatchObject({ exitCode: 0, stdout: `alice-work-${tag}\nalice-home-${tag}\n` });
      expect(await fixture.run('bob', write('bob'))).toMatchObject({ exitCode: 0, stdout: `bob-work-${tag}\nbob-home-${tag}\n` });

      for (const [reader, owner] of [
        ['bob', 'alice'],
        ['alice', 'bob'],
      ] as const) {
        for (const file of [`/workspace/${tag}-${owner}.txt`, `/root/${tag}-${owner}.txt`]) {
          const read = await fixture.run(reader, `cat ${file}`);
          expect(read.exitCode, `${reader} reading ${owner}'s ${file}`).not.toBe(0);
          expect(read.stdout).toBe('');
        }
        const search = await fixture.run(
          reader,
          `ls -la /workspace /root; find / -path /proc -prune -o -path /sys -prune -o -name '${tag}-*' -print 2>/dev/null; true`,
        );
        expect(search.exitCode).toBe(0);
        expect(search.stdout).toContain(`${tag}-${reader}.txt`); // the reader's own files are found: the search works
        expect(search.stdout).not.toContain(`${tag}-${owner}.txt`);
        // The owner's host folder does not exist inside the reader's sandbox either.
        const hostPath = await fixture.run(reader, `ls ${shellQuote(fixture.user(owner).request.paths.workspace)}`);
        expect(hostPath.exitCode).not.toBe(0);
        expect(hostPath.stdout).not.toContain(`${tag}-${owner}.txt`);
      }
    });

    it("a user cannot see another user's processes", { timeout: TEST_TIMEOUT_MS }, async () => {
      const sleeper = `sleep 3${fixture.runId.replace(/[a-f]/g, '').slice(0, 4).padEnd(4, '7')}`;
      expect(await fixture.run('alice', `setsid ${sleeper} </dev/null >/dev/null 2>&1 & sleep 0.2; ps`)).toMatchObject({
        exitCode: 0,
        stdout: expect.stringContaining(sleeper),
      });
      const seen = await fixture.run('bob', 'ps');
      expect(seen.exitCode).toBe(0);
      expect(seen.stdout).not.toContain(sleeper);
      await fixture.run('alice', `kill $(pidof sleep) 2>/dev/null; true`);
    });

    it('sandbox names and hostnames say nothing about whose sandbox it is', { timeout: TEST_TIMEOUT_MS }, async () => {
      // A name is visible to every process that can list the engine's sandboxes, and inside a
      // sandbox through its hostname, DNS and the engine's own files: it must hold no platform or id.
      for (const name of ['alice', 'bob'] as const) {
        const user = fixture.user(name);
        const scope = user.request.scope;
        const telltales =
          scope.kind === 'user' ? [scope.identity.platform, scope.identity.id, String(user.session?.userId ?? '')].filter((value) => value.length >= 4) : [];
        const hostname = await fixture.run(name, 'hostname');
        expect(hostname.exitCode).toBe(0);
        const entries = await fixture.entriesOf(name);
        expect(entries.length, `${name} has a sandbox listed`).toBeGreaterThan(0);
        for (const telltale of telltales) {
          for (const entry of entries) expect(entry.containerName.toLowerCase(), `${name}'s sandbox name`).not.toContain(telltale.toLowerCase());
          expect(hostname.stdout.toLowerCase(), `${name}'s hostname`).not.toContain(telltale.toLowerCase());
        }
      }
    });

    it("a user's variables are absent from another user's environment", { timeout: TEST_TIMEOUT_MS }, async () => {
      const aliceToken = fixture.user('alice').variables.GITHUB_TOKEN!;
      const bobToken = fixture.user('bob').variables.TOKEN!;
      const bob = await fixture.run('bob', `env; [ -n "$TOKEN" ] && echo bob-has-own-token; [ -z "$GITHUB_TOKEN" ] && echo bob-has-no-github-token`);
      expect(bob.exitCode).toBe(0);
      expect(bob.stdout).toContain('bob-has-own-token');
      expect(bob.stdout).toContain('bob-has-no-github-token');
      expect(bob.stdout).not.toContain(aliceToken);
      expect(bob.stdout).not.toMatch(/^GITHUB_TOKEN=/m);

      const alice = await fixture.run('alice', `env; [ -n "$GITHUB_TOKEN" ] && echo alice-has-own-token; [ -z "$TOKEN" ] && echo alice-has-no-token`);
      expect(alice.exitCode).toBe(0);
      expect(alice.stdout).toContain('alice-has-own-token');
      expect(alice.stdout).toContain('alice-has-no-token');
      expect(alice.stdout).not.toContain(bobToken);
      expect(alice.stdout).not.toMatch(/^TOKEN=/m);
    });

    describe.skipIf(fixture.declaredOff('networkIsolation'))('network', () => {
      it("a user cannot connect to a listener in another user's sandbox", { timeout: TEST_TIMEOUT_MS }, async (context) => {
        await fixture.requireCapability(context, 'networkIsolation');
        const port = 20_000 + randomInt(10_000);
        const reply = `berth-reached-${fixture.runId}`;
        // setsid: the listener is meant to outlive the command that started it, like a dev server.
        const start = await fixture.run(
          'alice',
          `setsid nc -ll -p ${port} -e /bin/echo ${reply} </dev/null >/dev/null 2>&1 & sleep 0.5; ` +
            `IP=$(${OWN_ADDRESS}); echo "ip=$IP"; nc -w 2 "$IP" ${port} </dev/null`,
          { timeout: 20 },
        );
        const address = /^ip=(\d+\.\d+\.\d+\.\d+)$/m.exec(start.stdout)?.[1];
        expect(address, `alice's sandbox has an IPv4 address (output: ${JSON.stringify(start.stdout)})`).toBeDefined();
        expect(start.stdout, 'alice reaches her own listener: the listener works').toContain(reply);

        const bobAddress = await fixture.run('bob', OWN_ADDRESS);
        expect(bobAddress.stdout.trim(), 'bob has a network interface, so the attempt below is a real one').toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        const attempt = await fixture.run('bob', `nc -w 2 ${address} ${port} </dev/null; echo "rc=$?"`, { timeout: 20 });
        expect(attempt.stdout).not.toContain(reply);

        const again = await fixture.run('alice', `nc -w 2 ${address} ${port} </dev/null; kill $(pidof nc) 2>/dev/null; true`, { timeout: 20 });
        expect(again.stdout, "alice's listener was still up after bob's attempt").toContain(reply);
      });
    });

    it.skipIf(fixture.declaredOff('networkNone'))(
      'with docker_network false a sandbox has no interface but loopback',
      { timeout: TEST_TIMEOUT_MS },
      async (context) => {
        await fixture.requireCapability(context, 'networkNone');
        const result = await fixture.run('olive', 'ls /sys/class/net');
        expect(result).toMatchObject({ exitCode: 0, stdout: 'lo\n' });
      },
    );
  });
}
