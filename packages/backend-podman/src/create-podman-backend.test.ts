import { describe, expect, it } from 'vitest';
import { createPodmanBackend } from './create-podman-backend.js';

describe('createPodmanBackend', () => {
  it('builds without touching the engine, with the engine facts it will adapt to', async () => {
    const backend = createPodmanBackend({ settings: {}, environment: process.env, socketPath: '/nonexistent/podman.sock' });
    expect(backend.name).toBe('podman');
    expect(backend.podmanHost).toBeTypeOf('function');
    await backend.close();
  });

  it('refuses a bad option in one line naming the factory and the option', () => {
    expect(() => createPodmanBackend({ settings: {}, namePrefix: '../x' })).toThrow(/^createPodmanBackend: option namePrefix is invalid: /);
    expect(() => createPodmanBackend({ settings: {}, socketPath: '' })).toThrow(/^createPodmanBackend: option socketPath is invalid: /);
    expect(() => createPodmanBackend({ settings: { container_memory: 'lots' } })).toThrow(/terminal\.container_memory is the string "lots"/);
  });
});
