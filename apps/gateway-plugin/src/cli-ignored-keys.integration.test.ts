import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { findEngine } from './testing/find-engine.js';
import { removeTestRoot } from './testing/remove-test-root.js';
import { runBerthCli } from './testing/run-berth-cli.js';

// A Hermes config with keys of Hermes' own that Berth ignores: every command that reads it says so.
const root = mkdtempSync(path.join(os.tmpdir(), 'berth-cli-ignored-'));
const home = path.join(root, 'hermes');
const environment = { HOME: root, HERMES_HOME: home, TERMINAL_SANDBOX_DIR: path.join(root, 'sandboxes') };
const engine = findEngine('docker');
const IGNORED_LINE =
  'berth: ignoring terminal.docker_extra_args, terminal.env_type: Hermes settings with no meaning for a Berth sandbox (see docs/configuration.md)';
vi.setConfig({ testTimeout: 600_000 });

mkdirSync(home, { recursive: true });
writeFileSync(
  path.join(home, 'config.yaml'),
  'terminal:\n  env_type: docker\n  docker_image: localhost/berth-busybox:latest\n  docker_extra_args: [--privileged]\n  timeout: 60\n',
);

afterAll(() => removeTestRoot(engine, root));

describe('Hermes keys Berth ignores', () => {
  it('berth exec says so in one warning line on stderr, and the sandbox is not privileged', async () => {
    const run = await runBerthCli(['exec', '--task', 'ignored-keys', '--', 'grep CapEff /proc/self/status; echo to-stderr >&2'], environment);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe(`${IGNORED_LINE}\nto-stderr\n`);
    // --privileged would give every capability (CapEff 000001ffffffffff or wider).
    expect(run.stdout).toMatch(/^CapEff:\s+[0-9a-f]+\n$/);
    expect(run.stdout).not.toMatch(/ffffffffff/);
    expect((await runBerthCli(['rm', '--task', 'ignored-keys', '--purge'], environment)).status).toBe(0);
  });

  it('berth doctor names them as a config warning, in its report and in --json', async () => {
    const human = await runBerthCli(['doctor'], environment);
    expect(human.stdout).toContain(`warning  config: ${IGNORED_LINE.replace(/^berth: /, '')}\n    -> Berth never passes them to the engine`);
    const json = await runBerthCli(['doctor', '--json'], environment);
    expect(JSON.parse(json.stdout).checks).toContainEqual({
      name: 'config',
      status: 'warning',
      detail: IGNORED_LINE.replace(/^berth: /, ''),
      fix: expect.stringMatching(/^Berth never passes them to the engine/),
    });
  });
});
