import type { BackendEngineHooks, InspectedSandbox } from './test-backend.js';

/**
 * What {@link dockerApiEngine} needs of a client of the Docker Engine API (dockerode's, for one;
 * Podman's compatible API through it too), typed by shape so the testkit depends on no client.
 */
export interface DockerApiClient {
  getContainer(id: string): {
    remove(options: { force: boolean }): Promise<unknown>;
    inspect(): Promise<{ Config: { Env?: string[] | null; Labels?: Record<string, string> | null }; HostConfig: { PidsLimit?: number | null } }>;
  };
}

/**
 * The suite's engine hooks over a Docker Engine API client: `docker rm -f`, and `docker inspect`
 * (environment, labels, the whole document). `pidsLimitFromEngine`: read the pids limit from the
 * engine rather than inside the sandbox (gVisor shows no cgroup files inside; its limit is on the
 * cgroup that holds every process of gVisor's).
 */
export function dockerApiEngine(client: DockerApiClient | (() => DockerApiClient), options: { pidsLimitFromEngine?: boolean } = {}): BackendEngineHooks {
  const container = (id: string) => (typeof client === 'function' ? client() : client).getContainer(id);
  return {
    async removeContainer(containerId) {
      await container(containerId).remove({ force: true });
    },
    async inspect(containerId): Promise<InspectedSandbox> {
      const document = await container(containerId).inspect();
      return { env: document.Config.Env ?? [], labels: document.Config.Labels ?? {}, document };
    },
    ...(options.pidsLimitFromEngine
      ? { pidsLimit: async (containerId: string) => (await container(containerId).inspect()).HostConfig.PidsLimit ?? undefined }
      : {}),
  };
}
