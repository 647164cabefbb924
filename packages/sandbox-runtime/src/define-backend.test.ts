import { SandboxError } from '@berth/core';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { SandboxRuntime } from './create-sandbox-runtime.js';
import { backendOptionsSchema, defineBackend, type BackendOptions } from './define-backend.js';
import type { SandboxSettings } from './sandbox-settings.js';
import { createFakeDriver, type FakeDriver } from './testing/fake-driver.js';

interface FakeBackendOptions extends BackendOptions {
  readonly processList?: boolean;
}

const backends: SandboxRuntime[] = [];
afterEach(async () => {
  for (const backend of backends.splice(0)) await backend.close();
});

// A backend defined as a third party would: the shared options, one of its own, a fake engine.
function fakeBackendFactory(seen: { options?: FakeBackendOptions; settings?: SandboxSettings } = {}) {
  return defineBackend({
    name: 'createFakeBackend',
    options: backendOptionsSchema.extend({ processList: z.boolean().optional() }),
    settings: (settings) => ({ ...settings, docker_max_sandboxes: 7 }),
    driver: (options: FakeBackendOptions, settings): FakeDriver => {
      seen.options = options;
      seen.settings = settings;
      return createFakeDriver({ processList: options.processList ?? true });
    },
    extend: (runtime, driver) => ({ ...runtime, fake: driver }),
  });
}

describe('defineBackend', () => {
  it('makes a factory that runs the sandbox runtime over the definition driver, with the settings it adjusts', () => {
    const seen: { options?: FakeBackendOptions; settings?: SandboxSettings } = {};
    const createFakeBackend = fakeBackendFactory(seen);
    const backend = createFakeBackend({ settings: { docker_image: 'busybox:1' }, processList: false, reapIntervalMs: 0, namePrefix: 'fake-' });
    backends.push(backend);
    expect(backend.name).toBe('fake');
    expect(backend.driver).toBe(backend.fake);
    expect(seen.options?.processList).toBe(false);
    expect(seen.settings).toMatchObject({ docker_image: 'busybox:1', docker_max_sandboxes: 7 });
    expect(backend.containerName).toBeTypeOf('function');
  });

  it('refuses a bad option in one line naming the factory and the option, shared or its own', () => {
    const createFakeBackend = fakeBackendFactory();
    const refusal = (options: unknown): unknown => {
      try {
        backends.push(createFakeBackend(options as FakeBackendOptions));
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const shared = refusal({ settings: {}, namePrefix: '../x' });
    expect(shared).toBeInstanceOf(SandboxError);
    expect(shared).toMatchObject({ code: 'OPTIONS_INVALID' });
    expect((shared as Error).message).toMatch(/^createFakeBackend: option namePrefix is invalid: expected letters, digits, "_", "\." or "-"$/);
    expect((refusal({ settings: {}, processList: 'yes' }) as Error).message).toMatch(/^createFakeBackend: option processList is invalid: /);
    expect((refusal({ settings: {}, sandboxRoot: 'relative/root' }) as Error).message).toBe(
      'createFakeBackend: option sandboxRoot is invalid: expected an absolute folder',
    );
    expect((refusal({}) as Error).message).toBe('createFakeBackend: option settings is invalid: expected the sandbox settings (sandboxSettings(config))');
  });

  it('validates the settings with core schema before any driver is made', () => {
    const seen: { options?: FakeBackendOptions } = {};
    expect(() => fakeBackendFactory(seen)({ settings: { container_memory: 'lots' } })).toThrow(/terminal\.container_memory is the string "lots"/);
    expect(seen.options).toBeUndefined();
  });
});
