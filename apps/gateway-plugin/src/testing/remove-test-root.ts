import { rmSync } from 'node:fs';
import path from 'node:path';
import { releaseDisksUnder } from '@berth/sandbox-runtime';
import { requestEngine } from './engine-client.js';
import type { EngineEndpoint } from './find-engine.js';

/** The engine's containers whose mounts lie under `folder`: what a test made, whoever else uses the engine. */
export async function containersUnder(engine: EngineEndpoint, folder: string): Promise<Array<{ Id: string; Names: string[] }>> {
  const response = await requestEngine(engine, 'GET', '/containers/json?all=1');
  const containers = JSON.parse(response.body) as Array<{ Id: string; Names: string[]; Mounts?: Array<{ Source?: string }> }>;
  return containers.filter((container) => container.Mounts?.some((mount) => mount.Source?.startsWith(folder + path.sep)));
}

/**
 * What a test leaves, gone: the containers mounted from its folder (and each one's network, named
 * as the container), the disks mounted under it, then the folder itself.
 */
export async function removeTestRoot(engine: EngineEndpoint, root: string): Promise<void> {
  for (const container of await containersUnder(engine, root)) {
    await requestEngine(engine, 'DELETE', `/containers/${container.Id}?force=1&v=1`).catch(() => {});
    await requestEngine(engine, 'DELETE', `/networks/${container.Names[0]!.replace(/^\//, '')}`).catch(() => {});
  }
  await releaseDisksUnder(root);
  rmSync(root, { recursive: true, force: true });
}
