import { describe, expect, it } from 'vitest';
import { createDockerBackend } from './create-docker-backend.js';

describe('createDockerBackend', () => {
  it('takes the gateway environment as the process gives it, and builds without touching the engine', async () => {
    const backend = createDockerBackend({ settings: {}, environment: process.env, socketPath: '/nonexistent/docker.sock' });
    expect(backend.name).toBe('docker');
    expect(backend.capabilities).toEqual({
      persistentSession: true,
      networkIsolation: true,
      idleStop: true,
      adoption: true,
      hostFolders: true,
      networkNone: true,
    });
    await backend.close();
  });

  it('refuses a bad option in one line naming the factory and the option', () => {
    expect(() => createDockerBackend({ settings: {}, namePrefix: '../x' })).toThrow(/^createDockerBackend: option namePrefix is invalid: /);
    expect(() => createDockerBackend({ settings: { container_memory: 'lots' } })).toThrow(/terminal\.container_memory is the string "lots"/);
  });

  it('names the socket it tried when the engine does not answer', async () => {
    const backend = createDockerBackend({ settings: {}, socketPath: '/nonexistent/docker.sock' });
    await expect(backend.describe()).rejects.toMatchObject({ code: 'ENGINE_UNAVAILABLE', endpoint: '/nonexistent/docker.sock' });
    await backend.close();
  });
});
