#!/usr/bin/env node
// Type-checks the workspace's projects — every folder of pnpm-workspace.yaml's globs that has a
// tsconfig.json, or the folders named on the command line — with TypeScript 7's native compiler
// (the root devDependency `typescript-native`), two at a time. It checks what TypeScript 6 checks,
// in a quarter of the time; TypeScript 6 stays the `typescript` that tsup's declaration build
// loads as a library (TypeScript 7 has no such API). See docs/dependencies.md.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const compiler = path.join(root, 'node_modules', 'typescript-native', 'bin', 'tsc');
const PARALLEL = 2;

function workspaceProjects() {
  const globs = [...readFileSync(path.join(root, 'pnpm-workspace.yaml'), 'utf8').matchAll(/^\s*-\s*['"]?([\w.-]+)\/\*['"]?\s*$/gm)].map((match) => match[1]);
  return globs.flatMap((parent) =>
    readdirSync(path.join(root, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => path.join(root, parent, entry.name)),
  );
}

const projects = (process.argv.length > 2 ? process.argv.slice(2).map((folder) => path.resolve(folder)) : workspaceProjects())
  .filter((folder) => existsSync(path.join(folder, 'tsconfig.json')))
  .sort();
if (!existsSync(compiler)) {
  console.error(`typecheck: ${path.relative(root, compiler)} is missing; run pnpm install`);
  process.exit(1);
}

const check = (folder) =>
  new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, [compiler, '-p', path.join(folder, 'tsconfig.json'), '--pretty', 'false'], {
      cwd: folder,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ folder, code, output, seconds: (Date.now() - started) / 1000 }));
  });

let failed = 0;
const queue = [...projects];
await Promise.all(
  Array.from({ length: PARALLEL }, async () => {
    for (let folder = queue.shift(); folder !== undefined; folder = queue.shift()) {
      const result = await check(folder);
      const name = path.relative(root, folder);
      if (result.code === 0) {
        console.log(`typecheck: ${name} ok (${result.seconds.toFixed(1)} s)`);
      } else {
        failed += 1;
        console.log(`typecheck: ${name} FAILED\n${result.output.trimEnd()}`);
      }
    }
  }),
);
if (failed > 0) {
  console.error(`typecheck: ${failed} of ${projects.length} projects failed`);
  process.exit(1);
}
console.log(`typecheck: ${projects.length} projects ok`);
