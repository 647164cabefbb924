import { randomInt } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEST_IMAGE as IMAGE, expectSuccess, useCliHarness } from './testing/cli-harness.js';

// `berth top --once --json` as an operator runs it (the built CLI in a subprocess), on Docker and
// on Podman, while a real sandbox burns CPU, fills memory (a tmpfs file: its pages are charged to
// the sandbox's cgroup and stay) and writes to its own disk. The bounds are wide on purpose: the
// machine is shared (two cores) and a sample is a second long.
const { root, berth, writeConfig } = useCliHarness();

interface Row {
  scope: string;
  state: string;
  cpuPercent: number | null;
  memory: { usedMb: number; limitMb: number | null } | null;
  processes: { current: number; limit: number | null } | null;
  disk: { usedMb: number; limitMb: number } | null;
  network: { receivedBytes: number; sentBytes: number } | null;
  commandsLastHour: number | null;
  lastCommandSecondsAgo: number | null;
}

describe.each(['docker', 'podman'] as const)('berth top on %s', (engine) => {
  it('shows CPU, memory, disk and commands move as a sandbox burns CPU, fills memory and writes to its disk', async () => {
    const task = `top-${engine}-${randomInt(1e9)}`;
    const config = writeConfig(
      `top-${engine}.yaml`,
      `terminal:\n  backend: ${engine}\n  docker_image: ${IMAGE}\n  timeout: 60\n  container_memory: 512\n  container_cpu: 2\n  audit_file: ${path.join(root, `audit-${engine}.jsonl`)}\n`,
    );
    const run = (command: string) => berth(['exec', '--config', config, '--task', task, '--', command]);
    const top = async (): Promise<Row> => {
      const output = await berth(['top', '--once', '--json', '--config', config]);
      expectSuccess(output);
      const row = (JSON.parse(output.stdout) as Row[]).find((candidate) => candidate.scope === `task:${task}`);
      expect(row, `berth top listed no row for task:${task}: ${output.stdout.slice(0, 500)}`).toBeDefined();
      return row!;
    };
    try {
      expectSuccess(await run('true'));
      const quiet = await top();
      expect(quiet).toMatchObject({ state: 'running', memory: { limitMb: 512 }, processes: { current: expect.any(Number) } });
      expect(quiet.network).not.toBeNull();
      expect(quiet.commandsLastHour).toBeGreaterThanOrEqual(1);
      expect(quiet.lastCommandSecondsAgo).toBeLessThan(120);

      // 60 MB in /tmp (tmpfs) and 40 MB on the sandbox's disk; then busy loops for 10 s, read while they run.
      expectSuccess(
        await run('dd if=/dev/zero of=/tmp/fill bs=1M count=60 2>/dev/null && dd if=/dev/zero of=/workspace/fill bs=1M count=40 2>/dev/null && sync'),
      );
      // Two loops, two cores allowed (on a busy shared machine one loop alone may get less than half
      // a core), left running in the background until the sample is taken: the CLI itself may take
      // seconds to start on a busy machine, longer than any fixed burn. `timeout 120` if the kill is missed.
      const loop = (n: number) => `sh -c 'echo $$ > /tmp/burn${n}.pid; exec timeout 120 sh -c "while :; do :; done"' </dev/null >/dev/null 2>&1 &`;
      expectSuccess(await run(`${loop(1)} ${loop(2)} sleep 1; cat /tmp/burn1.pid /tmp/burn2.pid >/dev/null`));
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const busy = await top();
      expectSuccess(await run('kill $(cat /tmp/burn1.pid /tmp/burn2.pid); rm -f /tmp/burn1.pid /tmp/burn2.pid'));
      // Beside stress-ng --cpu 2 and the other lane, the two loops got about half a core (46 %, seen).
      expect(busy.cpuPercent, 'CPU % while a busy loop runs').toBeGreaterThan(25);
      expect(busy.memory!.usedMb - quiet.memory!.usedMb, 'memory after 60 MB in /tmp').toBeGreaterThan(40);
      expect(busy.disk!.usedMb - quiet.disk!.usedMb, 'disk after 40 MB in /workspace').toBeGreaterThan(25);
      expect(busy.commandsLastHour).toBeGreaterThan(quiet.commandsLastHour!);

      // The loop over, the files removed: CPU falls back and the memory goes.
      expectSuccess(await run('rm -f /tmp/fill /workspace/fill'));
      const after = await top();
      expect(after.cpuPercent, 'CPU % once the loop ended').toBeLessThan(busy.cpuPercent! / 2);
      expect(busy.memory!.usedMb - after.memory!.usedMb).toBeGreaterThan(40);
    } finally {
      await berth(['rm', '--config', config, '--task', task, '--purge']);
    }
  });
});
