import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runWithSession } from '@berth/core';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createBerthPlugin } from '../berth-plugin.js';
import { createInProcessTerminalRegistry } from '../create-in-process-terminal-registry.js';
import { TEST_IMAGE, uid } from '../testing/cli-harness.js';
import { findEngine } from '../testing/find-engine.js';
import { removeTestRoot } from '../testing/remove-test-root.js';

// terminal.metrics_listen in a gateway, against the real engine: the plugin's terminal tool runs a
// command, and the metrics its listener serves count it; with metrics_real_user_ids the user is on
// berth_sandbox_info, and no variable's value is anywhere.
vi.setConfig({ testTimeout: 300_000 });
const root = mkdtempSync(path.join(os.tmpdir(), 'berth-plugin-metrics-it-'));
const engine = findEngine('docker');
const user = uid();
const secret = `team_secret_${uid()}`;
const plugin = createBerthPlugin();
afterAll(async () => {
  await plugin.close();
  await removeTestRoot(engine, root);
});

describe('the plugin with terminal.metrics_listen', () => {
  it('counts what its terminal tool ran, names the user only as opted in, and holds no secret', async () => {
    const terminal = createInProcessTerminalRegistry();
    await plugin.register({
      specificationVersion: 'v1',
      terminal,
      config: {
        sandbox_dir: path.join(root, 'sandboxes'),
        docker_image: TEST_IMAGE,
        docker_forward_env: ['TEAM_TOKEN'],
        metrics_listen: '127.0.0.1:0',
        metrics_real_user_ids: true,
      },
      environment: { PATH: process.env.PATH ?? '', TEAM_TOKEN: secret },
    });
    const url = plugin.instances[0]!.metricsUrl!;
    const environment = await terminal.get('berth-docker').createEnvironment({ taskId: 'metrics-it' });
    const result = await runWithSession({ platform: 'telegram', userId: user }, () => environment.execute('echo "$TEAM_TOKEN"'));
    expect(result.output.trim()).toBe('***');
    const text = await (await fetch(url)).text();
    expect(text).toContain('berth_exec_total{outcome="ran"} 1');
    expect(text).toMatch(new RegExp(`^berth_sandbox_info\\{sandbox="berth-[0-9a-z]+",scope="user",state="running",user="telegram:${user}"\\} 1$`, 'm'));
    expect(text).not.toContain(secret);
  });
});
