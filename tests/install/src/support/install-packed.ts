import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The environment a user's own shell gives npm: without the global config that `pnpm run` points
 * npm at (its own rc file), which would hide the machine's (a `cafile` for a proxy's certificate
 * authority, say) and make every registry fetch fail.
 */
const userEnvironment = (): NodeJS.ProcessEnv => {
  const environment = { ...process.env };
  delete environment.npm_config_globalconfig;
  return environment;
};

/** The repository's root. */
export const REPOSITORY = path.resolve(import.meta.dirname, '..', '..', '..', '..');

/** Every package Berth publishes: the non-private packages of `packages/` and `apps/`. */
export async function publishedPackages(): Promise<Array<{ name: string; folder: string }>> {
  const found: Array<{ name: string; folder: string }> = [];
  for (const group of ['packages', 'apps']) {
    for (const entry of await readdir(path.join(REPOSITORY, group))) {
      const folder = path.join(REPOSITORY, group, entry);
      const manifest = JSON.parse(await readFile(path.join(folder, 'package.json'), 'utf8').catch(() => '{}')) as { name?: string; private?: boolean };
      if (manifest.name && !manifest.private) found.push({ name: manifest.name, folder });
    }
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** A fresh project outside the workspace with Berth's packed tarballs installed by npm. */
export interface InstalledProject {
  readonly folder: string;
  /** Package name → the tarball `pnpm pack` made (as published: workspace ranges replaced). */
  readonly tarballs: Readonly<Record<string, string>>;
  /** Runs `node file` in the project, with `environment` added; resolves with its output. */
  node(file: string, environment?: Record<string, string>): Promise<{ stdout: string; stderr: string }>;
  /** Runs a program the project installed (`node_modules/.bin/NAME`). */
  bin(name: string, args: readonly string[], environment?: Record<string, string>): Promise<{ stdout: string; stderr: string }>;
  /** Runs a program of the machine's (`npm`, say) in the project's folder. */
  command(name: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }>;
}

/**
 * Packs every published package (they must be built), writes a project that depends on the
 * tarballs (`dependencies` names which) and on `registryPackages` from the registry, and
 * installs it with npm, as a user would (npm also installs the peer dependencies).
 */
export async function installPacked(dependencies: readonly string[], registryPackages: Readonly<Record<string, string>> = {}): Promise<InstalledProject> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'berth-install-'));
  const packs = path.join(root, 'packs');
  const folder = path.join(root, 'project');
  await mkdir(packs);
  await mkdir(folder);
  const tarballs: Record<string, string> = {};
  for (const { name, folder: packageFolder } of await publishedPackages()) {
    const { stdout } = await run('pnpm', ['pack', '--pack-destination', packs], { cwd: packageFolder });
    const tarball = stdout.trim().split('\n').at(-1)!.trim();
    tarballs[name] = path.isAbsolute(tarball) ? tarball : path.join(packs, path.basename(tarball));
  }
  // Every Berth package from its tarball, also where one depends on another.
  const overrides = Object.fromEntries(Object.entries(tarballs).map(([name, tarball]) => [name, `file:${tarball}`]));
  await writeFile(
    path.join(folder, 'package.json'),
    JSON.stringify(
      {
        name: 'berth-consumer',
        private: true,
        type: 'module',
        dependencies: { ...Object.fromEntries(dependencies.map((name) => [name, `file:${tarballs[name]}`])), ...registryPackages },
        overrides,
      },
      null,
      2,
    ),
  );
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
    cwd: folder,
    env: userEnvironment(),
    maxBuffer: 16 * 1024 * 1024,
  });
  return {
    folder,
    tarballs,
    node: (file, environment = {}) => run(process.execPath, [file], { cwd: folder, env: { ...process.env, ...environment }, maxBuffer: 16 * 1024 * 1024 }),
    command: (name, args) => run(name, [...args], { cwd: folder, env: userEnvironment(), maxBuffer: 16 * 1024 * 1024 }),
    bin: (name, args, environment = {}) =>
      run(path.join(folder, 'node_modules', '.bin', name), [...args], { cwd: folder, env: { ...process.env, ...environment }, maxBuffer: 16 * 1024 * 1024 }),
  };
}
