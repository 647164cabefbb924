import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createPlatformRegistry, createSandboxResolver, parseTerminalConfig, SandboxError, type SandboxRequest } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { createSandboxRuntime, type SandboxRuntime } from '../create-sandbox-runtime.js';
import { sandboxSettings } from '../sandbox-settings.js';
import { createFakeDriver } from '../testing/fake-driver.js';

// The audit trail and the per-user limits as a runtime applies them, over the fake engine
// (real host shells): one line per command and per sandbox event, the secrets masked.

const SECRET = 'ghp_audit_secret_value_41';
const folders: string[] = [];
const runtimes: SandboxRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function setUp(settings: Record<string, unknown> = {}) {
  const sandboxDir = mkdtempSync(path.join(tmpdir(), 'berth-audit-runtime-'));
  folders.push(sandboxDir);
  const auditFile = path.join(sandboxDir, 'audit.jsonl');
  const config = parseTerminalConfig({ sandbox_dir: sandboxDir, lifetime_seconds: 0, container_disk: 0, audit_file: auditFile, ...settings });
  const resolver = createSandboxResolver({ config, registry: createPlatformRegistry(), environment: { HERMES_USER_TELEGRAM_41_GITHUB_TOKEN: SECRET } });
  const request = (userId: string): SandboxRequest => resolver.resolve({ session: { platform: 'telegram', userId } });
  const runtime = createSandboxRuntime({ driver: createFakeDriver(), settings: sandboxSettings(config), reapIntervalMs: 0, firstLaunchWaitMs: 0 });
  runtimes.push(runtime);
  const lines = (): Array<Record<string, unknown>> =>
    readFileSync(auditFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { runtime, request, auditFile, lines };
}

describe('the audit trail of a runtime', () => {
  it('writes one line per command with its masked first line, exit code, duration and bytes out, and the sandbox made', async () => {
    const { runtime, request, auditFile, lines } = setUp({ docker_mask_secrets: false });
    await runtime.doExec(request('41'), { command: `echo "$GITHUB_TOKEN" ${SECRET}\necho second line` });
    await runtime.doExec(request('41'), { command: 'exit 3' });
    await runtime.close();
    expect(readFileSync(auditFile, 'utf8')).not.toContain(SECRET);
    const commands = lines().filter((line) => line.type === 'command');
    expect(commands).toHaveLength(2);
    const [first, second] = commands;
    const name = runtime.containerName(request('41'));
    expect(first).toMatchObject({ sandbox: name, scope: 'user', command: 'echo "$GITHUB_TOKEN" *** …', outcome: 'ran', exitCode: 0 });
    // The token's value twice, a space and a newline, then "second line" and a newline.
    expect(first!.bytesOut).toBe(2 * SECRET.length + 2 + 'second line\n'.length);
    expect(typeof first!.durationMs).toBe('number');
    expect(second).toMatchObject({ command: 'exit 3', exitCode: 3, outcome: 'ran' });
    // Opaque unless the operator opts in: never the platform id.
    expect(first!.user).toMatch(/^u-[0-9a-f]{24}$/);
    expect(JSON.stringify(lines())).not.toContain('telegram:41');
    expect(lines().filter((line) => line.type === 'sandbox')).toEqual([expect.objectContaining({ event: 'created', sandbox: name, user: first!.user })]);
  });

  it('gives each user an opaque id of their own, and the real id only with audit_real_user_ids', async () => {
    const { runtime, request, lines } = setUp();
    await runtime.doExec(request('41'), { command: 'true' });
    await runtime.doExec(request('42'), { command: 'true' });
    await runtime.close();
    const [a, b] = lines().filter((line) => line.type === 'command');
    expect(a!.user).not.toBe(b!.user);

    const opted = setUp({ audit_real_user_ids: true });
    await opted.runtime.doExec(opted.request('41'), { command: 'true' });
    await opted.runtime.close();
    expect(opted.lines().find((line) => line.type === 'command')!.user).toBe('telegram:41');
  });

  it('refuses a user past user_commands_per_minute with one line, audited as a refusal, while another user runs', async () => {
    const { runtime, request, lines } = setUp({ user_commands_per_minute: 2 });
    await runtime.doExec(request('41'), { command: 'true' });
    await runtime.doExec(request('41'), { command: 'true' });
    const refused = await runtime.doExec(request('41'), { command: `echo ${SECRET}` }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SandboxError);
    expect((refused as SandboxError).code).toBe('USER_RATE_LIMIT');
    expect((refused as SandboxError).message).toMatch(/terminal\.user_commands_per_minute \(2\) allows; retry in \d+ s$/);
    expect((await runtime.doExec(request('42'), { command: 'echo other' })).stdout).toBe('other\n');
    await runtime.close();
    const commands = lines().filter((line) => line.type === 'command');
    expect(commands.map((line) => line.outcome)).toEqual(['ran', 'ran', 'refused', 'ran']);
    expect(commands[2]).toMatchObject({ reason: 'USER_RATE_LIMIT', command: 'echo ***' });
  });

  it('refuses a user past user_concurrent_commands while their commands wait, and lets them run again after', async () => {
    const { runtime, request, lines } = setUp({ user_concurrent_commands: 1 });
    const running = runtime.doExec(request('41'), { command: 'sleep 0.3; echo done' });
    await expect(runtime.doExec(request('41'), { command: 'true' })).rejects.toMatchObject({ code: 'USER_CONCURRENCY_LIMIT' });
    await expect(runtime.doExec(request('42'), { command: 'true' })).resolves.toMatchObject({ exitCode: 0 });
    expect((await running).stdout).toBe('done\n');
    await expect(runtime.doExec(request('41'), { command: 'true' })).resolves.toMatchObject({ exitCode: 0 });
    await runtime.close();
    expect(lines().filter((line) => line.type === 'command' && line.outcome === 'refused')).toHaveLength(1);
  });

  it('records a stop and a purge of a sandbox', async () => {
    const { runtime, request, lines } = setUp();
    const target = request('41');
    await runtime.doExec(target, { command: 'true' });
    await runtime.stop(target.scope.key);
    await runtime.remove(target.scope.key, { purge: true, paths: target.paths });
    await runtime.close();
    expect(
      lines()
        .filter((line) => line.type === 'sandbox')
        .map((line) => line.event),
    ).toEqual(['created', 'stopped', 'purged']);
  });
});
