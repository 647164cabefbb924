import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { useCliHarness } from './testing/cli-harness.js';

// berth demo as a user runs it: the built dist/cli.js in a subprocess, against the real engine
// (testing/cli-harness.ts).
const { berth, containersUnder } = useCliHarness();

describe('berth demo', () => {
  it('plays the conversation, shows who saw what, and leaves nothing behind', async () => {
    const before = new Set(readdirSync(os.tmpdir()).filter((name) => name.startsWith('berth-demo-')));
    const run = await berth(['demo'], { NO_COLOR: '1' });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/USER\s+TRIED TO READ\s+SAW/);
    expect(run.stdout).toContain('isolation held');
    expect(run.stdout).not.toMatch(/LEAK/);
    expect(run.stdout).not.toMatch(/ghp_(alice|bob|carol)_/);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: no terminal colour code (ESC [) in output that is not a terminal
    expect(run.stdout).not.toMatch(/\u001b\[/);
    const after = readdirSync(os.tmpdir()).filter((name) => name.startsWith('berth-demo-') && !before.has(name));
    expect(after).toEqual([]);
    // Behind, on the engine and on the disk: the folder the demo says it removed, and its containers.
    const sandboxDir = /removed the demo's containers and (\S+)\n/.exec(run.stdout)?.[1];
    expect(sandboxDir, run.stdout).toBeDefined();
    expect(existsSync(sandboxDir!)).toBe(false);
    expect(await containersUnder(sandboxDir!)).toEqual([]);
  });

  it('--json reports every attempt', async () => {
    const run = await berth(['demo', '--json']);
    expect(run.status).toBe(0);
    const report = JSON.parse(run.stdout) as {
      isolationHeld: boolean;
      cleanedUp: boolean;
      attempts: unknown[];
      users: Array<{ identity: string }>;
      sandboxDir: string;
    };
    expect(report.isolationHeld).toBe(true);
    expect(report.cleanedUp).toBe(true);
    expect(report.attempts).toHaveLength(3 * 3 + 3 * 2 * 2);
    expect(report.users.map((user) => user.identity.split(':')[0])).toEqual(['telegram', 'telegram', 'whatsapp']);
    expect(existsSync(report.sandboxDir)).toBe(false);
    expect(await containersUnder(report.sandboxDir)).toEqual([]);
  });
});
