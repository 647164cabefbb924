import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, startAttackGateway, type AttackGateway, type Sender } from './support/attack-gateway.js';

// 200 first messages from 50 users within one second, then the idle reaper freezing sandboxes
// and stopping frozen ones while commands keep arriving (and thaw or start them again): zero
// errors, exactly 50 containers, each user sees only their own marker.
const USERS = 50;
const MESSAGES_PER_USER = 4;
const base = randomInt(1_000_000_000, 1_900_000_000);
const users: Sender[] = Array.from({ length: USERS }, (_, index) =>
  index % 2 === 0 ? { platform: 'telegram', userId: String(base + index) } : { platform: 'whatsapp', userId: `+1666${base + index}` },
);
const markerOf = (sender: Sender): string => `marker-${sender.platform}-${String(sender.userId).replace('+', '')}`;
let gateway: AttackGateway;

beforeAll(async () => {
  gateway = await startAttackGateway({ config: { container_memory: 32, lifetime_seconds: 2, docker_freeze_seconds: 2, docker_pids_limit: 64 } });
});

afterAll(async () => {
  await gateway?.cleanup();
});

/** What a failure needs to be understood: each failed user's container as the engine saw it, and the gateway's log. */
async function whyFailed(senders: readonly Sender[]): Promise<string> {
  const states = await Promise.all(
    senders.map(async (sender) => {
      const container = await gateway.containerOf(sender);
      if (!container) return `${sender.platform}:${sender.userId}: no container`;
      const { State } = await docker.getContainer(container.Id).inspect();
      return `${sender.platform}:${sender.userId}: ${container.Id.slice(0, 12)} ${JSON.stringify(State)}`;
    }),
  );
  return [...states, ...gateway.logs.slice(-60)].join('\n');
}

/** One message: write the user's marker if absent, then show every marker the sandbox holds. */
function message(sender: Sender): Promise<{ sender: Sender; output: string; returncode: number } | { sender: Sender; error: string }> {
  const command = `[ -f /workspace/${markerOf(sender)} ] || touch /workspace/${markerOf(sender)}; ls /workspace`;
  return gateway.run(sender, command, { timeout: 120 }).then(
    (result) => ({ sender, ...result }),
    (error: unknown) => ({ sender, error: (error as Error).message }),
  );
}

describe('a storm of first messages, then the reaper under load', () => {
  it(`${USERS * MESSAGES_PER_USER} first messages from ${USERS} users within one second: zero errors, ${USERS} containers, each user sees only their own marker`, async () => {
    const started = performance.now();
    const pending = users.flatMap((sender) =>
      Array.from(
        { length: MESSAGES_PER_USER },
        () => new Promise<Awaited<ReturnType<typeof message>>>((resolve) => setTimeout(() => resolve(message(sender)), randomInt(0, 1000))),
      ),
    );
    const results = await Promise.all(pending);
    const elapsed = performance.now() - started;
    const errors = results.filter((result) => 'error' in result || result.returncode !== 0);
    expect(errors.map((result) => ('error' in result ? result.error : `exit ${result.returncode}: ${result.output}`))).toEqual([]);
    for (const result of results) expect('output' in result ? result.output : '').toBe(`${markerOf(result.sender)}\n`);
    expect(await gateway.containers()).toHaveLength(USERS);
    console.log(`storm: ${results.length} messages, ${USERS} sandboxes created in ${Math.round(elapsed)} ms`);
  });

  it('the idle reaper (lifetime_seconds 2, docker_freeze_seconds 2) freezes and stops sandboxes while commands keep arriving: zero errors, still 50 containers, markers intact', async () => {
    const results: Array<Awaited<ReturnType<typeof message>>> = [];
    const until = Date.now() + 8_000;
    let reaped = 0;
    let frozen = 0;
    const watcher = (async () => {
      while (Date.now() < until) {
        const states = (await gateway.containers()).map((container) => container.State);
        reaped = Math.max(reaped, states.filter((state) => state === 'exited').length);
        frozen = Math.max(frozen, states.filter((state) => state === 'paused').length);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    const inFlight: Array<Promise<void>> = [];
    while (Date.now() < until) {
      const sender = users[randomInt(0, USERS)]!;
      inFlight.push(message(sender).then((result) => void results.push(result)));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await Promise.all(inFlight);
    await watcher;
    const errors = results.filter((result) => 'error' in result || result.returncode !== 0);
    expect(
      errors.map((result) => ('error' in result ? result.error : `exit ${result.returncode}: ${result.output}`)),
      errors.length === 0 ? '' : await whyFailed(errors.map((result) => result.sender)),
    ).toEqual([]);
    for (const result of results) expect('output' in result ? result.output : '').toBe(`${markerOf(result.sender)}\n`);
    // The reaper did run: some sandboxes were frozen, and some frozen long enough were stopped, during the window.
    expect(frozen).toBeGreaterThan(0);
    expect(reaped).toBeGreaterThan(0);
    expect(await gateway.containers()).toHaveLength(USERS);
    console.log(`reaper under load: ${results.length} commands, up to ${frozen} sandboxes frozen and ${reaped} stopped at once, 0 errors`);
  });
});
