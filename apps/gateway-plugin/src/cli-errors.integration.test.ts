import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEST_IMAGE as IMAGE, uid, useCliHarness } from './testing/cli-harness.js';

// What the CLI says when it cannot run a command: one line, exit 125, nothing created; the
// built dist/cli.js in a subprocess, against the real engine (testing/cli-harness.ts).
const { root, berth, writeConfig, containersUnder } = useCliHarness();

describe('berth errors: one line, exit 125, nothing created', () => {
  const cases: Array<[string, string[], RegExp, string?]> = [
    ['malformed YAML', ['--config', 'bad-yaml.yaml'], /bad-yaml\.yaml is not valid YAML at line \d+/, 'terminal:\n  docker_image: [unclosed\n'],
    ['an unknown key', ['--config', 'unknown-key.yaml'], /unknown key terminal\.docker_imagee/, 'terminal:\n  docker_imagee: x\n'],
    ['a wrong type', ['--config', 'wrong-type.yaml'], /terminal\.container_memory is .*expected/, 'terminal:\n  container_memory: [1]\n'],
    ['a missing config file', ['--config', 'nowhere.yaml'], /nowhere\.yaml does not exist/],
    [
      'a docker_runtime the engine does not have',
      ['--config', 'unknown-runtime.yaml'],
      /^berth: terminal\.docker_runtime is nosuch, a runtime the docker engine does not have \(it has [^)]*\brunc\b[^)]*\); set docker_runtime to one of those, or remove it/,
      `terminal:\n  docker_image: ${IMAGE}\n  docker_runtime: nosuch\n`,
    ],
  ];
  it.each(cases)('%s', async (_label, options, message, text) => {
    const file = options[1]!;
    if (text !== undefined) writeConfig(file, text);
    const folder = mkdtempSync(path.join(root, 'err-'));
    const run = await berth(['exec', '--config', path.join(root, file), '--platform', 'telegram', '--user', uid(), '--', 'touch /workspace/x'], {
      TERMINAL_SANDBOX_DIR: folder,
    });
    expect(run.status).toBe(125);
    expect(run.stderr).toMatch(message);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stdout).toBe('');
    expect(readdirSync(folder)).toEqual([]);
    expect(await containersUnder(folder)).toEqual([]);
  });

  const ids: Array<[string, string]> = [
    ['..', '..'],
    ['a/b', 'a/b'],
    ['empty', ''],
    ['10 KB', '9'.repeat(10_240)],
    ['/etc', '/etc'],
  ];
  it.each(ids)('the user id %s', async (_label, id) => {
    const folder = mkdtempSync(path.join(root, 'err-'));
    for (const args of [
      ['exec', '--platform', 'telegram', '--user', id, '--', 'id'],
      ['exec', '--task', id, '--', 'id'],
      ['rm', '--platform', 'whatsapp', '--user', id, '--purge'],
    ]) {
      const run = await berth(args, { TERMINAL_SANDBOX_DIR: folder });
      expect(run.status, args.join(' ').slice(0, 80)).toBe(125);
      expect(run.stderr).toMatch(/^berth: .+\n$/);
      expect(run.stderr.length).toBeLessThan(400);
    }
    expect(readdirSync(folder)).toEqual([]);
    expect(await containersUnder(folder)).toEqual([]);
  });

  it('a sandbox_dir Berth cannot use: under /proc (it once spun for ever), under /sys, relative, past a file', async () => {
    const cwd = mkdtempSync(path.join(root, 'cwd-'));
    writeFileSync(path.join(cwd, 'a-file'), '');
    const cases: Array<[string, RegExp]> = [
      ['/proc/berth-nope', /^berth: terminal\.sandbox_dir gives the sandbox folder "\/proc\/berth-nope", under \/proc, a kernel file system/],
      ['/sys/berth', /under \/sys, a kernel file system where no folder can be kept; choose a folder on a disk/],
      ['relative-sandboxes', /a relative path, which would depend on the folder Berth runs from; write an absolute path/],
      [path.join(cwd, 'a-file', 's'), /is a file, not a folder/],
    ];
    for (const [sandboxDir, message] of cases) {
      const config = writeConfig(
        `sandbox-dir-${cases.findIndex(([dir]) => dir === sandboxDir)}.yaml`,
        `terminal:\n  sandbox_dir: ${JSON.stringify(sandboxDir)}\n`,
      );
      for (const args of [
        ['exec', '--config', config, '--task', 'x', '--', 'true'],
        ['doctor', '--config', config],
      ]) {
        const started = Date.now();
        const run = await berth(args, { TERMINAL_SANDBOX_DIR: undefined }, cwd);
        expect(Date.now() - started, `${sandboxDir} ${args[0]}`).toBeLessThan(20_000);
        expect(run.stderr, `${sandboxDir} ${args[0]}`).toMatch(message);
        if (args[0] === 'exec') {
          expect(run.status).toBe(125);
          expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
        }
      }
    }
    // Nothing in the folder berth ran from, nor at the relative path.
    expect(readdirSync(cwd)).toEqual(['a-file']);
  });

  it('an unreachable engine, naming the socket', async () => {
    const folder = mkdtempSync(path.join(root, 'err-'));
    const run = await berth(['exec', '--task', 'x', '--', 'id'], { DOCKER_HOST: `unix://${root}/no-engine.sock`, TERMINAL_SANDBOX_DIR: folder });
    expect(run.status).toBe(125);
    expect(run.stderr).toContain(`${root}/no-engine.sock`);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(readdirSync(folder)).toEqual([]);
  });

  it('a missing image, naming it', async () => {
    const folder = mkdtempSync(path.join(root, 'err-'));
    const config = writeConfig('missing-image.yaml', 'terminal:\n  docker_image: localhost/berth-no-such-image:0\n');
    const run = await berth(['exec', '--config', config, '--task', 'x', '--', 'id'], { TERMINAL_SANDBOX_DIR: folder });
    expect(run.status).toBe(125);
    expect(run.stderr).toContain('localhost/berth-no-such-image:0');
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(await containersUnder(folder)).toEqual([]);
  });
});
