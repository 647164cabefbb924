import { describe, expect, it } from 'vitest';
import { createKubernetesBackend } from './create-kubernetes-backend.js';

describe('createKubernetesBackend', () => {
  it('refuses a bad option in one line naming the factory and the option', () => {
    // Pod and claim names are DNS-1123 labels: a prefix Docker takes is refused here.
    expect(() => createKubernetesBackend({ settings: {}, environment: {}, namePrefix: 'Berth_' })).toThrow(
      /^createKubernetesBackend: option namePrefix is invalid: expected lower-case letters, digits or "-" \(a Kubernetes name\)$/,
    );
    expect(() => createKubernetesBackend({ settings: {}, environment: {}, startTimeoutMs: 10 })).toThrow(
      /^createKubernetesBackend: option startTimeoutMs is invalid: /,
    );
    expect(() => createKubernetesBackend({ settings: {}, environment: {}, image: 'two words' })).toThrow(
      /^createKubernetesBackend: option image is invalid: expected an image reference without spaces$/,
    );
    expect(() => createKubernetesBackend({ settings: { container_memory: 'lots' }, environment: {} })).toThrow(
      /terminal\.container_memory is the string "lots"/,
    );
  });

  it('builds without contacting the cluster', async () => {
    const backend = createKubernetesBackend({
      settings: { docker_max_running: 'auto' },
      kubernetes: { kubernetes_kubeconfig: '/nonexistent/kubeconfig' },
      environment: {},
      reapIntervalMs: 0,
    });
    expect(backend.name).toBe('kubernetes');
    expect(backend.capabilities).toMatchObject({ hostFolders: false });
    await backend.close();
  });
});
