import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keyOf, useServeHarness } from '../testing/serve-harness.js';

// `berth serve --metrics` against the real engine: the built dist/cli.js serves the metrics of the
// commands its clients run, and no secret value of a forwarded or a user's variable, and no user
// id, is in them.
const FORWARDED = `team_secret_${randomInt(1_000_000_000)}`;
const { alice, tokens, exec, serverOutput } = useServeHarness({
  config: ['docker_forward_env: [TEAM_TOKEN]'],
  environment: { TEAM_TOKEN: FORWARDED },
  serve: ['--metrics', '127.0.0.1:0'],
});

/** A sample of the text format: `name{labels} value`. */
const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (?:-?[0-9.e+-]+|NaN|[+-]Inf)$/;

const metricsUrl = (): string => {
  const found = /metrics at (http:\/\/\S+\/metrics);/.exec(serverOutput())?.[1];
  if (!found) throw new Error(`berth serve printed no metrics URL: ${serverOutput()}`);
  return found;
};

async function scrape(): Promise<string> {
  const answer = await fetch(metricsUrl());
  expect(answer.status).toBe(200);
  return answer.text();
}

const sampleOf = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('berth serve --metrics', () => {
  it('says where it serves the metrics, on loopback, and nothing but /metrics', async () => {
    expect(metricsUrl()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect((await fetch(metricsUrl().replace(/metrics$/, ''))).status).toBe(404);
  });

  it('counts a real command that ran, shows its sandbox by its opaque name, and holds no secret or user id', async () => {
    const before = sampleOf(await scrape(), 'berth_exec_total{outcome="ran"}') ?? 0;
    const run = await exec(keyOf(alice), 'echo "$TEAM_TOKEN $GITHUB_TOKEN"');
    expect(run).toMatchObject({ status: 0, stdout: '*** ***\n' });
    // A scrape's reading of the sandboxes serves one second: the one before the command may still
    // be served (seen when the sandbox was made and the command ran within that second).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const text = await scrape();
    for (const line of text.split('\n').filter((candidate) => candidate !== '' && !candidate.startsWith('#'))) expect(line).toMatch(SAMPLE);
    expect(sampleOf(text, 'berth_exec_total{outcome="ran"}')).toBe(before + 1);
    expect(sampleOf(text, 'berth_exec_duration_seconds_count{outcome="ran"}')).toBe(before + 1);
    expect(sampleOf(text, 'berth_sandbox_events_total{event="created"}')).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'berth_sandboxes{state="running"}')).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^berth_sandbox_info\{sandbox="berth-[0-9a-z]+",scope="user",state="running"\} 1$/m);
    for (const secret of [FORWARDED, tokens.alice, alice]) expect(text).not.toContain(secret);
    // Where the shared bound holds the sandboxes, each running one's memory is there by its name.
    if (sampleOf(text, 'berth_capacity_limit{resource="memory_bytes"}') !== undefined) {
      expect(text).toMatch(/^berth_sandbox_memory_bytes\{sandbox="berth-[0-9a-z]+"\} [1-9]\d*$/m);
      expect(text).toMatch(/^berth_sandbox_cpu_seconds_total\{sandbox="berth-[0-9a-z]+"\} [0-9.e-]+$/m);
    }
  });

  it("shows a sandbox's own disk fill as it writes, and its network counters, by its opaque name", async () => {
    expect((await exec(keyOf(alice), 'rm -f /workspace/fill; sync')).status).toBe(0);
    /** Each sandbox's sample of `metric`, by its name. */
    const byName = (text: string, metric: string): Map<string, number> =>
      new Map([...text.matchAll(new RegExp(`^${metric}\\{sandbox="(berth-[0-9a-z]+)"\\} (\\S+)$`, 'gm'))].map((match) => [match[1]!, Number(match[2])]));
    // A reading taken before that command may still be served for a second.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const before = byName(await scrape(), 'berth_sandbox_disk_used_bytes');
    // The harness's sandboxes have their own disk (container_disk's default).
    expect(before.size, 'a disk gauge per sandbox').toBeGreaterThan(0);
    expect((await exec(keyOf(alice), 'dd if=/dev/zero of=/workspace/fill bs=1M count=30 2>/dev/null && sync')).status).toBe(0);
    // A scrape's reading serves one second.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const text = await scrape();
    const grown = [...byName(text, 'berth_sandbox_disk_used_bytes')].filter(([name, used]) => used - (before.get(name) ?? used) > 20 * 2 ** 20);
    expect(
      grown.map(([name]) => name),
      'the one sandbox whose disk took 30 MB',
    ).toHaveLength(1);
    const [name] = grown[0]!;
    expect(byName(text, 'berth_sandbox_disk_limit_bytes').get(name)).toBeGreaterThan(30 * 2 ** 20);
    if (sampleOf(text, 'berth_capacity_limit{resource="memory_bytes"}') !== undefined) {
      expect(byName(text, 'berth_sandbox_network_received_bytes_total').get(name)).toBeGreaterThanOrEqual(0);
      expect(byName(text, 'berth_sandbox_network_sent_bytes_total').get(name)).toBeGreaterThanOrEqual(0);
    }
    expect((await exec(keyOf(alice), 'rm -f /workspace/fill')).status).toBe(0);
  });
});
