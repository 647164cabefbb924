import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { SandboxRequest } from '@berth/core';
import type { DriverDescription, SandboxDriverV1 } from '@berth/core/driver';
import { afterAll, describe, expect, it } from 'vitest';
import { createEgressBroker } from './egress-broker.js';
import { EGRESS_PROXY_PORT } from './egress-names.js';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import { sandboxSettings } from '../sandbox-settings.js';

// The broker's own duties beside the proxy: where it listens, and what it does when it cannot.

const root = mkdtempSync(path.join(os.tmpdir(), 'berth-broker-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A sandbox on 127.0.0.6 whose network's gateway is `gateway` (loopback stands in for a bridge). */
function setUp(gateway: string) {
  const driver = {
    engine: 'docker',
    capabilities: { hostFolders: true },
    networkAddress: async () => ({ address: '127.0.0.6', gateway }),
  } as unknown as SandboxDriverV1;
  const warnings: string[] = [];
  const broker = createEgressBroker({
    settings: sandboxSettings({ docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com'] } }),
    driver,
    describe: async () => ({ networkPool: '127.0.0.0/8' }) as DriverDescription,
    exceptions: () => [],
    unenforced: async () => undefined,
    logger: { info: () => undefined, warn: (line) => warnings.push(line), error: () => undefined },
  });
  const entry = { name: 'berth-broker-test', containerId: 'c1', running: true, paths: { root } } as unknown as SandboxEntry;
  const request = () =>
    ({
      environment: { variables: { GITHUB_TOKEN: 'ghp_value' }, details: [{ name: 'GITHUB_TOKEN', value: 'ghp_value', secret: true }] },
      paths: { root },
    }) as unknown as SandboxRequest;
  return { broker, entry, request, warnings };
}

describe('the egress broker', () => {
  it("tries a listen that failed again on the sandbox's next command, and says so in berth doctor meanwhile", async () => {
    const gateway = '127.0.0.5';
    // Another process holds the sandbox's gateway address (the CLI's own proxy, say).
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(EGRESS_PROXY_PORT, gateway, resolve));
    const { broker, entry, request, warnings } = setUp(gateway);
    try {
      await broker.attach(entry);
      expect(warnings.join('\n')).toMatch(/cannot listen on 127\.0\.0\.5:3129 \(EADDRINUSE\).*tried again on its next command/);
      expect((await broker.status()).proxy).toMatch(/could not listen on 127\.0\.0\.5 \(EADDRINUSE\)/);
      expect(broker.variables(entry, request()).HTTPS_PROXY).toBeUndefined();
      await new Promise<void>((resolve) => holder.close(() => resolve()));
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      // The next command tries again; the one after it has the proxy.
      broker.variables(entry, request());
      for (let waited = 0; (await broker.status()).proxy?.includes('could not listen') && waited < 5_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect((await broker.status()).proxy).toBe(`port ${EGRESS_PROXY_PORT} on each sandbox network's gateway (1 listening in this process)`);
      expect(broker.variables(entry, request()).HTTPS_PROXY).toBe(`http://${gateway}:${EGRESS_PROXY_PORT}`);
    } finally {
      holder.close();
      await broker.close();
    }
  });
});
