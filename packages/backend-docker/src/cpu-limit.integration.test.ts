import { SandboxError } from '@berth/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './testing/integration-harness.js';

// terminal.user_cpu_seconds_per_day on a real Docker engine: the CPU time is read from the
// sandbox's own cgroup under the shared bound, so a user who burned it is refused, and another
// user's command runs.

describe('CPU time per day on Docker', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness();
  });
  afterAll(async () => harness?.cleanup());

  it('refuses the next command of a user who used the day’s CPU seconds, while another user runs', async () => {
    // The engine found as the plugin finds it: the harness's own client is not known to be local,
    // so a backend over it has no shared bound, and no cgroup to read (it says so once).
    const backend = harness.backend({ user_cpu_seconds_per_day: 1 }, { docker: undefined });
    const alice = harness.request({ platform: 'telegram', userId: '4111' });
    const bob = harness.request({ platform: 'telegram', userId: '4112' });
    // A busy loop of shell builtins until the shell itself used two seconds of CPU (its utime and
    // stime in /proc, in ticks of 1/100 s), at most 60 s of wall time: whatever else loads the machine.
    const burn = [
      'end=$(( $(date +%s) + 60 )); i=0',
      'while :; do i=$((i+1)); if [ $((i % 20000)) -eq 0 ]; then',
      '  set -- $(cat /proc/$$/stat); [ $(( ${14} + ${15} )) -ge 200 ] && break; [ "$(date +%s)" -ge "$end" ] && break',
      'fi; done; echo burnt',
    ].join('\n');
    expect((await backend.doExec(alice, { command: burn })).stdout).toBe('burnt\n');
    const refused = await backend.doExec(alice, { command: 'echo again' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SandboxError);
    expect((refused as SandboxError).code).toBe('USER_CPU_LIMIT');
    expect((refused as SandboxError).message).toMatch(
      /^you used \d+ s of CPU time today \(UTC\), the most terminal\.user_cpu_seconds_per_day \(1\) allows; retry after 00:00 UTC, in \d+ h \d+ min$/,
    );
    expect(await backend.doExec(bob, { command: 'echo bob' })).toMatchObject({ exitCode: 0, stdout: 'bob\n' });
    await backend.close();
  });
});
