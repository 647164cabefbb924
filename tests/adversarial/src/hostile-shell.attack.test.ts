import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTACK_ENGINES, randomTelegramUser, startAttackGateway, UNDER_GVISOR, within, type AttackGateway } from './support/attack-gateway.js';

// A user who attacks their own sandbox's shell: jobs left running that keep writing, their own
// EXIT trap, `exit`, deleting Berth's state folder, and writing into the session's control
// stream through /proc. What must hold (docs/sandbox-runtime.md, "What is guaranteed"): a
// result holds only what its own command wrote; cd and export persist or a notice says why not;
// results never cross users; timeouts hold; the gateway stays bounded.

describe.each(ATTACK_ENGINES)('a hostile shell on %s', (backend) => {
  let gateway: AttackGateway;
  const attacker = randomTelegramUser();
  const victim = randomTelegramUser();

  beforeAll(async () => {
    gateway = await startAttackGateway({ config: { backend, docker_network: false } });
    await gateway.run(victim, 'echo victim-ready');
  });

  afterAll(async () => {
    await gateway?.cleanup();
  });

  it("a background job's late output never reaches a later result, and cd/export survive the new shell", async () => {
    const first = await gateway.run(attacker, 'cd /tmp; export KEPT=yes; (sleep 1; echo LATE; echo LATE-ERR >&2) & echo started');
    expect(first.output).toBe('started\n');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const later = await gateway.run(attacker, 'pwd; echo "$KEPT"');
    expect(later.output).toBe('/tmp\nyes\n');
    const again = await gateway.run(attacker, 'sleep 0.2; echo quiet');
    expect(again.output).toBe('quiet\n');
  });

  it('three `yes > /dev/stdout &` left behind cost the gateway no CPU once their commands ended', async () => {
    for (let index = 0; index < 3; index++) {
      // Until the frame ends the jobs' output is the command's own: capped head and tail per stream.
      const left = await gateway.run(attacker, 'yes > /dev/stdout & yes > /dev/stderr & echo left');
      expect(left.returncode).toBe(0);
      expect(left.output.length).toBeLessThan(2 * 1024 * 1024 + 4096);
    }
    const before = process.cpuUsage();
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const used = process.cpuUsage(before);
    const share = (used.user + used.system) / 1000 / (performance.now() - started);
    // A flood read by the gateway costs it about half a core; nothing read costs about nothing.
    expect(share).toBeLessThan(0.1);
    expect((await gateway.run(victim, 'echo still-fast')).output).toBe('still-fast\n');
    await gateway.run(attacker, 'pkill yes || killall yes || true');
  });

  it('sessions retired for the flooding jobs they left behind leave no shell running', async () => {
    // Each retired session's shell must end, however its output is flooded: one left running
    // per retirement held its pids (under gVisor about ten host processes each, toward
    // docker_pids_limit) for the sandbox's lifetime. Seen on Podman's exec API, which dropped a
    // shell's `exit` when the connection closed under a flood.
    const shells =
      'n=0; for d in /proc/[0-9]*; do [ "$(tr "\\0" " " < $d/cmdline 2>/dev/null)" = "/bin/sh " ] && ' +
      'n=$((n+1)); done; echo "shells $n"; ps -o pid,ppid,args | grep -v " /bin/sh -c trap "';
    let listing = '';
    const count = async (): Promise<number> => {
      listing = (await gateway.run(attacker, shells)).output;
      return Number(/shells (\d+)/.exec(listing)?.[1]);
    };
    const before = await count();
    const listed = listing;
    for (let index = 0; index < 4; index++) {
      // Not `> /dev/stdout`: reopening a retired session's pipe, which nobody reads any more,
      // waits for a reader forever, and the job's shell would be counted.
      expect((await gateway.run(attacker, 'yes & yes >&2 & echo left')).returncode).toBe(0);
    }
    // The floods end (a shell left running by the engine stays when they do); what they cost the
    // machine would only slow the count down.
    await gateway.run(attacker, 'pkill yes || killall yes || true');
    let after = await count();
    // A dropped connection is closed within seconds (open-exec-channel.ts); the shell ends with it.
    for (let waited = 0; after > before && waited < 30_000; waited += 1000) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      after = await count();
    }
    expect(after, `shells in the sandbox after four sessions were retired, against before\n${listed}\n${listing}`).toBeLessThanOrEqual(before);
  });

  it("/dev/zero written into the other channel FIFOs under /run/berth (the kill shell's) costs the gateway no CPU once the command ended", async () => {
    // Under gVisor the shells start by engine exec (docs/gvisor.md), with no pipes under /run/berth:
    // the kill shell's output is its exec's stream, reached through /proc/PID/fd of the shells the
    // engine started (parent 0) that are not this command's own.
    const findChannels = UNDER_GVISOR
      ? 'a=" "; p=$$; while [ "$p" -gt 0 ]; do a="$a$p "; p=$(cut -d" " -f4 /proc/$p/stat); done; set --; for d in /proc/[0-9]*; ' +
        'do n=${d#/proc/}; case "$a" in *" $n "*) continue ;; esac; [ "$(cut -d" " -f4 $d/stat 2>/dev/null)" = 0 ] || ' +
        'continue; [ "$(tr "\\0" " " < $d/cmdline 2>/dev/null)" = "/bin/sh " ] && set -- "$@" "$d/fd/1" "$d/fd/2"; done'
      : 'o=$(readlink /proc/$$/fd/1); e=$(readlink /proc/$$/fd/2); set --; for f in /run/berth/*.out /run/berth/*.err; ' +
        'do [ -p "$f" ] && [ "$f" != "$o" ] && [ "$f" != "$e" ] && set -- "$@" "$f"; done';
    const flood = await gateway.run(attacker, `${findChannels}; for f in "$@"; do (cat /dev/zero > "$f" 2>/dev/null &); done; sleep 1; echo "flooding $#"`, {
      timeout: 30,
    });
    // Every channel but the command's own: the kill shell's stdout and stderr at least. They are
    // all found before the first is flooded: a kill shell retired for what its stdout got has its
    // names removed at once, and a loop that flooded as it went missed its stderr (seen under load).
    expect(Number(/flooding (\d+)/.exec(flood.output)?.[1]), `${flood.output.slice(-400)}\n${gateway.logs.join('\n')}`).toBeGreaterThanOrEqual(2);
    const before = process.cpuUsage();
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const used = process.cpuUsage(before);
    const share = (used.user + used.system) / 1000 / (performance.now() - started);
    // Read, the flood costs the gateway half a core; the shells whose pipes it fills are retired instead.
    expect(share, `the gateway's share of a core while the flood went on\n${gateway.logs.join('\n')}`).toBeLessThan(0.1);
    expect((await gateway.run(victim, 'echo still-fast')).output).toBe('still-fast\n');
    // The attacker gets answers again, and a timeout still holds (a new kill shell was made).
    expect((await gateway.run(attacker, 'echo back')).output).toBe('back\n');
    const timed = await gateway.run(attacker, 'sleep 30', { timeout: 2 });
    expect(timed.returncode).toBe(124);
    await gateway.run(attacker, 'pkill cat || killall cat || true');
  });

  it("the user's own trap … EXIT does not stop cd and export from persisting", async () => {
    await gateway.run(attacker, "trap 'echo bye' EXIT; cd /var; export TRAPPED=1");
    expect((await gateway.run(attacker, 'pwd; echo "$TRAPPED"')).output).toBe('/var\n1\n');
  });

  it('`exit` after a trap, and `exec`, say that cd and export were not kept, and the shell goes on', async () => {
    const exited = await gateway.run(attacker, "trap 'echo bye' EXIT; cd /etc; exit 3");
    expect(exited.returncode).toBe(3);
    expect(exited.output).toMatch(/berth: this command ended its shell before Berth could save its cd and export/);
    const replaced = await gateway.run(attacker, 'cd /usr; exec true');
    expect(replaced.output).toMatch(/berth: this command ended its shell/);
    expect((await gateway.run(attacker, 'echo alive')).output).toBe('alive\n');
  });

  it("deleting Berth's state folder in /tmp gives a truthful notice, and the next command runs in a fresh shell", async () => {
    await gateway.run(attacker, 'cd /tmp; export GONE=1');
    const deleted = await gateway.run(attacker, 'rm -rf /tmp/.berth-*; echo deleted');
    expect(deleted.output).toMatch(/^deleted\n/);
    expect(deleted.output).toMatch(/berth: this command deleted the sandbox's shell state/);
    const next = await gateway.run(attacker, 'pwd; echo "[$GONE]"');
    expect(next.output).toBe('/workspace\n[]\n');
  });

  it("writing into its own shell's control stream through /proc harms no one else, and timeouts still hold", async () => {
    // Every process's stdin in the sandbox, the session shell's control pipe among them.
    const injected = await gateway.run(
      attacker,
      "for fd in /proc/[0-9]*/fd/0; do printf 'echo INJECTED-$$ > /workspace/injected; echo __BERTH_forged_E_0\\n' > $fd 2>/dev/null & done; wait; echo sent",
    );
    expect(injected.output).toMatch(/sent/);
    const victimRun = await gateway.run(victim, 'echo victim-clean; ls /workspace');
    expect(victimRun.output).not.toContain('INJECTED');
    expect(victimRun.output.startsWith('victim-clean\n')).toBe(true);
    const slow = await within(30_000, "the attacker's timed-out command", gateway.run(attacker, 'sleep 30', { timeout: 2 }));
    expect(slow.returncode).toBe(124);
    const after = await gateway.run(attacker, 'echo after');
    expect(after.output).toContain('after');
  });
});
