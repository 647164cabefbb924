import { describe, expect, it } from 'vitest';
import { describeEngine } from './describe-engine.js';
import type { EngineReads } from './engine-reads.js';
import type { SandboxNetworks } from './sandbox-networks.js';

// An engine that says it runs one runtime whose binary is this host's `env` (which answers
// `--version`); the reads are a stand-in, the binary is real.
const reads: EngineReads = {
  local: true,
  socketPath: '/run/engine.sock',
  ping: async () => undefined,
  version: async () => ({ Version: '99.0', ApiVersion: '1.99' }) as Awaited<ReturnType<EngineReads['version']>>,
  info: async () => ({ Runtimes: { probe: { path: '/usr/bin/env' } }, DefaultRuntime: 'probe', MemTotal: 2 * 1024 ** 3, NCPU: 2 }),
  listContainers: async () => [],
  inspectContainer: async () => {
    throw new Error('not asked');
  },
  inspectImage: async () => {
    throw new Error('not asked');
  },
};
const connection = { reads, endpoint: '/run/engine.sock', discovery: 'a test', networks: {} as SandboxNetworks };

describe('describeEngine', () => {
  it("asks each local runtime's binary for its version", async () => {
    const description = await describeEngine('docker', connection);
    expect(description.runtimeVersions?.probe).toMatch(/env/i);
    expect(description).toMatchObject({ version: '99.0', apiVersion: '1.99', runtimes: ['probe'], host: { memoryMb: 2048, cpus: 2 } });
  });

  it('asks no binary when the caller needs no runtime versions (a status line), and says the rest alike', async () => {
    const description = await describeEngine('docker', connection, { runtimeVersions: false });
    expect(description.runtimeVersions).toBeUndefined();
    expect(description).toMatchObject({ version: '99.0', runtimes: ['probe'], defaultRuntime: 'probe', host: { memoryMb: 2048, cpus: 2 } });
  });
});
