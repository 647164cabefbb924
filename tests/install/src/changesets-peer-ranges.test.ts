import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { publishedPackages, REPOSITORY } from './support/install-packed.js';

// `changeset version` on a copy of the workspace's manifests and changesets config: a release of
// @berth/core must never leave a package with a narrower peer range on core than it had.
const run = promisify(execFile);
const changesetsBin = path.join(path.dirname(createRequire(path.join(REPOSITORY, 'package.json')).resolve('@changesets/cli/package.json')), 'bin.js');
const fixtures: string[] = [];
afterEach(async () => {
  for (const folder of fixtures.splice(0)) await rm(folder, { recursive: true, force: true });
});

interface Manifest {
  name: string;
  version: string;
  peerDependencies?: Record<string, string>;
}

async function release(bump: 'patch' | 'minor' | 'major'): Promise<{ before: Map<string, Manifest>; after: Map<string, Manifest> }> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'berth-changesets-'));
  fixtures.push(folder);
  await writeFile(path.join(folder, 'package.json'), JSON.stringify({ name: 'fixture', private: true }));
  await writeFile(path.join(folder, 'pnpm-workspace.yaml'), 'packages:\n  - "packages/*"\n');
  await mkdir(path.join(folder, '.changeset'));
  await cp(path.join(REPOSITORY, '.changeset', 'config.json'), path.join(folder, '.changeset', 'config.json'));
  await writeFile(path.join(folder, '.changeset', 'core-release.md'), `---\n'@berth/core': ${bump}\n---\n\nA ${bump} release of core.\n`);
  const before = new Map<string, Manifest>();
  for (const { name, folder: source } of await publishedPackages()) {
    const manifest = JSON.parse(await readFile(path.join(source, 'package.json'), 'utf8')) as Manifest;
    before.set(name, manifest);
    const target = path.join(folder, 'packages', name.replace('@berth/', ''));
    await mkdir(target, { recursive: true });
    await writeFile(path.join(target, 'package.json'), JSON.stringify(manifest, null, 2));
  }
  await run(process.execPath, [changesetsBin, 'version'], { cwd: folder });
  const after = new Map<string, Manifest>();
  for (const name of before.keys()) {
    after.set(name, JSON.parse(await readFile(path.join(folder, 'packages', name.replace('@berth/', ''), 'package.json'), 'utf8')) as Manifest);
  }
  return { before, after };
}

describe('changesets and the peer range on @berth/core', () => {
  it.each(['patch', 'minor'] as const)(
    'a %s release of core leaves every peer range as it was, and bumps nobody else',
    async (bump) => {
      const { before, after } = await release(bump);
      expect(after.get('@berth/core')!.version).not.toBe(before.get('@berth/core')!.version);
      for (const [name, manifest] of after) {
        if (name === '@berth/core') continue;
        expect(manifest.peerDependencies?.['@berth/core'], name).toBe(before.get(name)!.peerDependencies?.['@berth/core']);
        expect(manifest.version, `${name} needs no release for a ${bump} of core`).toBe(before.get(name)!.version);
      }
    },
    60_000,
  );

  it('a major release of core, which leaves the range, makes every dependent follow (never a narrower range on the old major)', async () => {
    const { after } = await release('major');
    const core = after.get('@berth/core')!.version;
    for (const [name, manifest] of after) {
      const range = manifest.peerDependencies?.['@berth/core'];
      if (name === '@berth/core' || range === undefined) continue;
      expect(range, name).toContain(core);
    }
  }, 60_000);
});
