import { describe, expect, it } from 'vitest';
import { assertSandboxDriver } from './driver.js';
import { UnsupportedSpecificationError } from './errors.js';

describe('assertSandboxDriver', () => {
  const driver = (over: Record<string, unknown>) => ({
    specificationVersion: 'v1',
    engine: 'acme',
    capabilities: { networkIsolation: true, hostFolders: true, processList: true },
    listProcesses: async () => ({ commands: [] }),
    ...over,
  });

  it('takes a v1 driver that lists processes, or one without a process list that lists none', () => {
    expect(() => assertSandboxDriver(driver({}))).not.toThrow();
    expect(() =>
      assertSandboxDriver(driver({ listProcesses: undefined, capabilities: { networkIsolation: true, hostFolders: true, processList: false } })),
    ).not.toThrow();
  });

  it('refuses another version, and a v1 driver made before listProcesses replaced isBusy, saying what to change', () => {
    expect(() => assertSandboxDriver(driver({ specificationVersion: 'v2' }))).toThrow(UnsupportedSpecificationError);
    expect(() => assertSandboxDriver(driver({ listProcesses: undefined, isBusy: async () => false }))).toThrow(
      /^sandbox driver acme declares capabilities\.processList but has no listProcesses\(id\); SandboxDriverV1's isBusy\(id\) became listProcesses\(id\)/,
    );
  });
});
