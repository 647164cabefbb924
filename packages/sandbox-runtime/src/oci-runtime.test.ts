import { describe, expect, it } from 'vitest';
import { assertRuntimeOffered, GVISOR_FALLBACKS, isOlderRelease, runtimeFacts, runtimeRelease } from './oci-runtime.js';

describe('runtimeFacts', () => {
  const engine = {
    defaultRuntime: 'runc',
    runtimeVersions: { runc: 'runc version 1.1.5+ds1', runsc: 'runsc version 0.0~20221219.0' },
  };

  it('tells a gVisor sandbox by what its binary says, and lists what Berth does differently there', () => {
    const facts = runtimeFacts(engine, 'runsc');
    expect(facts).toMatchObject({ name: 'runsc', configured: true, gvisor: true, release: '20221219', version: 'runsc version 0.0~20221219.0' });
    expect(facts.fallbacks).toEqual(GVISOR_FALLBACKS);
    expect(facts.olderThanTested).toBeUndefined();
  });

  it("is the engine's default runtime when none is configured, sharing the host's kernel", () => {
    expect(runtimeFacts(engine, undefined)).toEqual({
      name: 'runc',
      configured: false,
      version: 'runc version 1.1.5+ds1',
      release: '1.1.5',
      gvisor: false,
      fallbacks: [],
    });
  });

  it('does not guess from a name: a runtime called runsc whose binary did not answer is not taken for gVisor', () => {
    const facts = runtimeFacts({ defaultRuntime: 'runc' }, 'runsc');
    expect(facts).toEqual({ name: 'runsc', configured: true, gvisor: false, fallbacks: [] });
  });

  it('names the release the tests ran when the engine has an older one, and only then', () => {
    expect(runtimeFacts({ runtimeVersions: { gvisor: 'runsc version release-20210906.0' } }, 'gvisor').olderThanTested).toBe('20221219');
    expect(runtimeFacts({ runtimeVersions: { gvisor: 'runsc version release-20240729.0' } }, 'gvisor').olderThanTested).toBeUndefined();
    expect(runtimeFacts({ runtimeVersions: { runc: 'runc version 1.0.0-rc93' } }, undefined).olderThanTested).toBe('1.1.5');
    expect(runtimeFacts({ runtimeVersions: { runc: 'runc version 1.2.0' } }, undefined).olderThanTested).toBeUndefined();
    expect(runtimeFacts({ runtimeVersions: { kata: 'kata-runtime  : 3.2.0' } }, 'kata').olderThanTested).toBeUndefined();
  });
});

describe('runtimeRelease and isOlderRelease', () => {
  it("reads gVisor's date whether Debian or upstream built it, and x.y.z for the others", () => {
    expect(runtimeRelease('runsc version 0.0~20221219.0')).toBe('20221219');
    expect(runtimeRelease('runsc version release-20240729.0')).toBe('20240729');
    expect(runtimeRelease('runc version 1.1.5+ds1')).toBe('1.1.5');
    expect(runtimeRelease('crun version 1.8.1')).toBe('1.8.1');
    expect(runtimeRelease('something else')).toBeUndefined();
  });

  it('compares part by part as numbers, not as text', () => {
    expect(isOlderRelease('1.1.5', '1.10.0')).toBe(true);
    expect(isOlderRelease('1.10.0', '1.1.5')).toBe(false);
    expect(isOlderRelease('1.1.5', '1.1.5')).toBe(false);
    expect(isOlderRelease('20221219', '20240729')).toBe(true);
  });
});

describe('assertRuntimeOffered', () => {
  const docker = { engine: 'docker', runtimes: ['runc', 'runsc', 'io.containerd.runc.v2'], defaultRuntime: 'runc' };

  it('refuses a runtime the engine lacks in one line naming the key, the value, what the engine has and the fix', () => {
    expect(() => assertRuntimeOffered('nosuch', docker)).toThrow(
      'terminal.docker_runtime is nosuch, a runtime the docker engine does not have (it has io.containerd.runc.v2, runc, runsc); set ' +
        "docker_runtime to one of those, or remove it to use the engine's default (runc)",
    );
  });

  it("lets through the engine's runtimes, no runtime asked for, and an engine that lists none (a cluster's RuntimeClass)", () => {
    expect(() => assertRuntimeOffered('runsc', docker)).not.toThrow();
    expect(() => assertRuntimeOffered(undefined, docker)).not.toThrow();
    expect(() => assertRuntimeOffered('gvisor', { engine: 'kubernetes' })).not.toThrow();
    expect(() => assertRuntimeOffered('gvisor', { engine: 'podman', runtimes: [] })).not.toThrow();
  });
});
