#!/usr/bin/env node
// Packs @berth/openclaw as an OpenClaw plugin archive that installs without a registry:
// `openclaw plugins install ./berth-openclaw-<version>-bundled.tgz`. OpenClaw copies a local
// archive and runs `npm install --omit=dev` inside it; every runtime dependency (the other
// @berth packages, dockerode, zod, yaml) is in the archive as an npm bundled dependency, so
// that step finds them all and fetches nothing.
//
// Usage (after `pnpm build`): node scripts/pack-openclaw-plugin.mjs [--out FOLDER]
// Prints the archive's path on stdout.
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8'));

function fail(message) {
  process.stderr.write(`pack-openclaw-plugin: ${message}\n`);
  process.exit(1);
}

const outIndex = process.argv.indexOf('--out');
const outDir = path.resolve(outIndex > 0 ? (process.argv[outIndex + 1] ?? fail('--out needs a folder')) : packageDir);

for (const built of ['dist/index.js', 'dist/backend.js']) {
  if (!existsSync(path.join(packageDir, built))) fail(`${built} is missing; run "pnpm build" at the repository root first`);
}

function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.error) fail(`${command} could not start (${result.error.message}); is it on PATH?`);
  if (result.status !== 0)
    fail(`${command} ${args.join(' ')} failed (exit ${result.status}): ${(result.stderr || result.stdout).trim().split('\n').slice(-5).join(' | ')}`);
  return result.stdout;
}

const work = mkdtempSync(path.join(tmpdir(), 'berth-openclaw-pack-'));
try {
  const deployed = path.join(work, 'deployed');
  const stage = path.join(work, 'package');
  // pnpm deploy copies the package with its production dependency tree, flat (hoisted) like
  // npm's, with workspace packages as their published files.
  run('pnpm', ['--filter', manifest.name, 'deploy', '--prod', '--legacy', '--prefer-offline', '--config.node-linker=hoisted', deployed], packageDir);
  // Its files may be hard links into the workspace and pnpm's store: edit only a real copy.
  cpSync(deployed, stage, { recursive: true, verbatimSymlinks: true });
  rmSync(deployed, { recursive: true, force: true });

  // pnpm's bookkeeping and command links are not part of a package; OpenClaw refuses links.
  const modules = path.join(stage, 'node_modules');
  rmSync(path.join(modules, '.pnpm'), { recursive: true, force: true });
  rmSync(path.join(modules, '.modules.yaml'), { force: true });
  const packages = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.name === '.bin' && entry.isDirectory()) {
        rmSync(full, { recursive: true, force: true });
      } else if (entry.isSymbolicLink()) {
        fail(`${path.relative(stage, full)} is a symbolic link; the archive must hold real files`);
      } else if (entry.isDirectory()) {
        if (existsSync(path.join(full, 'package.json')) && path.basename(path.dirname(full)).match(/^(node_modules|@[^/]+)$/)) packages.push(full);
        walk(full);
      }
    }
  };
  walk(modules);

  // Workspace specifiers mean nothing outside this repository: pin them to the versions bundled.
  const versions = new Map();
  for (const dir of packages) {
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    versions.set(pkg.name, pkg.version);
  }
  const pin = (dependencies) => {
    if (!dependencies) return dependencies;
    return Object.fromEntries(
      Object.entries(dependencies).map(([name, spec]) => {
        if (!String(spec).startsWith('workspace:')) return [name, spec];
        const version = versions.get(name) ?? fail(`${name} is a workspace dependency but is not in the bundle`);
        const range = String(spec).slice('workspace:'.length);
        // As pnpm publishes them: `*` the exact version, `^`/`~` that prefix, anything else the range itself.
        return [name, range === '*' ? version : range === '^' || range === '~' ? `${range}${version}` : range];
      }),
    );
  };
  for (const file of [path.join(stage, 'package.json'), ...packages.map((dir) => path.join(dir, 'package.json'))]) {
    const pkg = JSON.parse(readFileSync(file, 'utf8'));
    if (file !== path.join(stage, 'package.json') && pkg.bin) {
      // Nothing runs a dependency's commands here, and for a package that declares one, the
      // npm install OpenClaw runs would fetch it again to link the command.
      delete pkg.bin;
      writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`);
    }
    if (!String(pkg.name).startsWith('@berth/')) continue;
    delete pkg.devDependencies;
    delete pkg.scripts;
    pkg.dependencies = pin(pkg.dependencies);
    pkg.peerDependencies = pin(pkg.peerDependencies);
    if (file === path.join(stage, 'package.json')) {
      // The archive carries its own @berth/core: a peer dependency elsewhere (one copy per
      // process), here it is the one copy, so it is a bundled dependency like the rest.
      for (const [name, range] of Object.entries(pkg.peerDependencies ?? {})) {
        if (versions.has(name)) pkg.dependencies = { ...pkg.dependencies, [name]: range };
      }
      // npm packs every bundled dependency with everything it needs from the same tree.
      pkg.bundleDependencies = Object.keys(pkg.dependencies ?? {});
    }
    writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`);
  }
  // Type declarations, TypeScript sources, source maps and docs of third-party packages are
  // never loaded at run time; dropping them halves the files OpenClaw copies and scans.
  const prune = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== '@berth' || dir !== modules) prune(full);
      } else if (/\.(d\.[cm]?ts|ts|cts|mts|map|md|markdown)$/i.test(entry.name) && !/^(license|licence|notice)/i.test(entry.name)) {
        rmSync(full);
      }
    }
  };
  prune(modules);
  if (lstatSync(path.join(modules, '@berth', 'gateway-plugin', 'dist', 'cli.js')).isFile() === false)
    fail('the socket client (gateway-plugin dist/cli.js) is missing from the bundle');

  const packed = run('npm', ['pack', '--silent', '--pack-destination', work], stage).trim().split('\n').pop();
  mkdirSync(outDir, { recursive: true });
  const target = path.join(outDir, packed.replace(/\.tgz$/, '-bundled.tgz'));
  copyFileSync(path.join(work, packed), target);
  process.stdout.write(`${target}\n`);
} finally {
  if (!process.env.KEEP) rmSync(work, { recursive: true, force: true });
}
