import Dockerode from 'dockerode';

/** The Docker engine the gateway's Berth uses (DOCKER_HOST, else the default socket). */
export const docker = new Dockerode(
  process.env.DOCKER_HOST?.startsWith('unix://') ? { socketPath: process.env.DOCKER_HOST.slice('unix://'.length) } : { socketPath: '/var/run/docker.sock' },
);

/** One of Berth's containers, as the engine reports it. */
export interface SandboxContainer {
  readonly id: string;
  readonly name: string;
  readonly state: string;
  /** The host folder mounted at /workspace. */
  readonly workspace: string | undefined;
  readonly labels: Readonly<Record<string, string>>;
  /** The whole inspect document, for "contains no secret" checks. */
  readonly inspected: string;
}

/** Berth's containers (label dev.berth.managed-by=berth) whose mounts lie under `root`: this test's only. */
export async function sandboxContainersUnder(root: string): Promise<SandboxContainer[]> {
  const listed = await docker.listContainers({ all: true, filters: { label: ['dev.berth.managed-by=berth'] } });
  const ours = listed.filter((container) => container.Mounts.some((mount) => mount.Source?.startsWith(`${root}/`)));
  return Promise.all(
    ours.map(async (container) => {
      const inspected = await docker.getContainer(container.Id).inspect();
      return {
        id: container.Id,
        name: (container.Names[0] ?? '').replace(/^\//, ''),
        state: container.State,
        workspace: container.Mounts.find((mount) => mount.Destination === '/workspace')?.Source,
        labels: container.Labels,
        inspected: JSON.stringify(inspected),
      };
    }),
  );
}

/** Removes this test's containers; a container already gone is fine. */
export async function removeSandboxContainersUnder(root: string): Promise<void> {
  for (const container of await sandboxContainersUnder(root))
    await docker
      .getContainer(container.id)
      .remove({ force: true, v: true })
      .catch(() => {});
}

/** Fails with a line naming the fix when no Docker engine answers. */
export async function assertEngineAnswers(image: string): Promise<void> {
  try {
    await docker.ping();
  } catch (error) {
    throw new Error(`no Docker engine answers (${(error as Error).message}); start one with "bash scripts/engines.sh"`);
  }
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(`the base image ${image} is missing; build it with "bash scripts/engines.sh"`);
  }
}

/** How many `docker exec` sessions the engine created in each of `containerIds` between two times (seconds). */
export async function execsCreated(containerIds: readonly string[], since: number, until: number): Promise<number> {
  const stream = (await docker.getEvents({ since, until, filters: { type: ['container'], event: ['exec_create'] } })) as unknown as NodeJS.ReadableStream;
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { id?: string })
    .filter((event) => event.id !== undefined && containerIds.includes(event.id)).length;
}
