import { describe, expect, it } from 'vitest';
import { describeEngine, reusedDescriptions } from './describe-engine.js';
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

describe('reusedDescriptions', () => {
  // Counts what the engine is asked: each ask is one /version and one /info on a real engine.
  function counting(fail = false) {
    const asked: boolean[] = [];
    const describeNow = async ({ runtimeVersions }: { readonly runtimeVersions: boolean }) => {
      asked.push(runtimeVersions);
      if (fail) throw new Error('engine down');
      return describeEngine('docker', connection, { runtimeVersions });
    };
    return { asked, describe: reusedDescriptions(describeNow) };
  }

  it('answers a brief ask with a full description that is fresh or on its way (berth doctor asks the engine once)', async () => {
    const { asked, describe: described } = counting();
    const [full, brief] = await Promise.all([described(), described({ runtimeVersions: false })]);
    expect(asked).toEqual([true]);
    expect(brief).toEqual(full);
    await described({ runtimeVersions: false });
    expect(asked).toEqual([true]);
  });

  it('asks again for runtime versions a brief description lacks, and keeps each answer to itself', async () => {
    const { asked, describe: described } = counting();
    const brief = await described({ runtimeVersions: false });
    const full = await described();
    expect(asked).toEqual([false, true]);
    expect(brief.runtimeVersions).toBeUndefined();
    expect(full.runtimeVersions?.probe).toMatch(/env/i);
    (full.warnings as string[]).push('changed by a caller');
    expect((await described()).warnings).toEqual([]);
  });

  it('keeps no failure: the next caller asks the engine again', async () => {
    const { asked, describe: described } = counting(true);
    await expect(described()).rejects.toThrow('engine down');
    await expect(described({ runtimeVersions: false })).rejects.toThrow('engine down');
    expect(asked).toEqual([true, false]);
  });
});
