import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createBerthPlugin } from '../berth-plugin.js';
import { createInProcessTerminalRegistry } from '../create-in-process-terminal-registry.js';
import { createRecordingBackend } from '../recording-backend.test-helper.js';

// terminal.metrics_listen: the plugin's opt-in listener, open while its instance is.
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

async function register(config: Record<string, unknown>) {
  const sandboxDir = mkdtempSync(path.join(os.tmpdir(), 'berth-plugin-metrics-'));
  folders.push(sandboxDir);
  const logged: string[] = [];
  const plugin = createBerthPlugin({ backend: createRecordingBackend() });
  await plugin.register({
    specificationVersion: 'v1',
    terminal: createInProcessTerminalRegistry(),
    config: { sandbox_dir: sandboxDir, ...config },
    environment: {},
    logger: { info: (line) => logged.push(line), warn: (line) => logged.push(line), error: (line) => logged.push(line) },
  });
  return { plugin, logged };
}

describe('the plugin with terminal.metrics_listen', () => {
  it('serves the metrics on loopback while registered, says where, and stops with the plugin', async () => {
    const { plugin, logged } = await register({ metrics_listen: '127.0.0.1:0' });
    const url = plugin.instances[0]!.metricsUrl!;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(logged).toContain(`berth: serving Prometheus metrics at ${url}`);
    expect(await (await fetch(url)).text()).toContain('# TYPE berth_exec_total counter');
    await plugin.close();
    await expect(fetch(url)).rejects.toThrow();
  });

  it('serves nothing without the key', async () => {
    const { plugin } = await register({});
    expect(plugin.instances[0]!.metricsUrl).toBeUndefined();
    await plugin.close();
  });

  it('refuses an address that is none in one line naming the key', async () => {
    await expect(register({ metrics_listen: '9464' })).rejects.toThrow(/^terminal\.metrics_listen .*expected HOST:PORT, \[IPv6\]:PORT or :PORT/);
  });
});
