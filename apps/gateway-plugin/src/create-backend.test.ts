import { EngineUnavailableError, parseTerminalConfig } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { createBackend } from './create-backend.js';

describe('createBackend', () => {
  it('builds the Kubernetes backend for backend: kubernetes, with its keys, without touching a cluster', async () => {
    const config = parseTerminalConfig({ backend: 'kubernetes', kubernetes_namespace: 'team-a', kubernetes_kubeconfig: '/nonexistent/kubeconfig' });
    const backend = await createBackend(config, { environment: {} });
    expect(backend.name).toBe('kubernetes');
    // Files live in a claim, not in host folders; isolation is claimed only where policies are enforced.
    expect(backend.capabilities).toMatchObject({ hostFolders: false, networkNone: false, networkIsolation: false, persistentSession: true });
    // The kubeconfig setting reached the backend: it is what the first use complains about.
    await expect(backend.describe()).rejects.toThrow(/terminal\.kubernetes_kubeconfig is \/nonexistent\/kubeconfig, which does not exist/);
    await backend.close();
  });

  it('says in one line which kubeconfig setting to make when no cluster is configured', async () => {
    const backend = await createBackend(parseTerminalConfig({ backend: 'kubernetes' }), { environment: { HOME: '/nonexistent-home' } });
    const error = await backend.describe().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngineUnavailableError);
    expect((error as Error).message).toMatch(/^no Kubernetes cluster is configured: .*; set terminal\.kubernetes_kubeconfig to the cluster's kubeconfig$/);
    await backend.close();
  });
});
