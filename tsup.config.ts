import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { defineConfig } from 'tsup';

/*
 * The one build config of every published package: `tsup --config ../../tsup.config.ts`, run in
 * the package's folder. The entries come from the package's own manifest, so a package says
 * once what it publishes: each `exports` target `./dist/NAME.js` is built from `src/NAME.ts`
 * with its declarations, and each `bin` target from `src/NAME.ts` without (a `#!` first line is
 * kept at the top).
 */
interface Manifest {
  readonly exports?: Record<string, string | { readonly import?: string }>;
  readonly bin?: Record<string, string>;
  /** Dependencies built into the package's dist (dev dependencies then), with their licences. */
  readonly berth?: { readonly inline?: readonly string[] };
}

const manifest = JSON.parse(readFileSync(path.join(process.cwd(), 'package.json'), 'utf8')) as Manifest;
const entryOf = (target: string): string | undefined => /^\.\/dist\/(.+)\.js$/.exec(target)?.[1];
const library = Object.values(manifest.exports ?? {})
  .map((target) => (typeof target === 'string' ? target : target.import))
  .map((target) => (target ? entryOf(target) : undefined))
  .filter((name): name is string => name !== undefined);
const binaries = Object.values(manifest.bin ?? {})
  .map(entryOf)
  .filter((name): name is string => name !== undefined);
// A dependency of many small modules costs a CLI command more to load than to parse once: core
// builds yaml in (72 CommonJS files, about 40 ms of every `berth ls`, against 20 ms as one file).
// Its CommonJS `require` of Node's own modules (yaml's `require('process')`) needs a `require` in
// the ES module: one line at the top of each file of the package's dist.
const inline = manifest.berth?.inline ?? [];
const requireShim = "import { createRequire as __berthCreateRequire } from 'node:module'; const require = __berthCreateRequire(import.meta.url);";

/** Each inlined dependency's licence, beside the code it travels with (`dist/LICENSE.yaml`). */
function copyInlinedLicences(): void {
  for (const name of inline) {
    const folder = path.dirname(createRequire(path.join(process.cwd(), 'package.json')).resolve(`${name}/package.json`));
    const licence = readdirSync(folder).find((file) => /^licen[cs]e/i.test(file));
    if (!licence) throw new Error(`${name} is built into ${process.cwd()}/dist, but has no LICENSE file to go with it`);
    copyFileSync(path.join(folder, licence), path.join(process.cwd(), 'dist', `LICENSE.${name.replace(/\//g, '+')}`));
  }
}

const entries = (names: readonly string[]) => Object.fromEntries(names.map((name) => [name, `src/${name}.ts`]));

export default defineConfig({
  entry: entries([...library, ...binaries]),
  format: ['esm'],
  dts: { entry: entries(library) },
  clean: true,
  sourcemap: true,
  target: 'node22',
  // Core's request protocol (limits and patterns, no imports) is bundled into the packages that
  // use it, so a spawned client shares the rule without loading @berth/core (zod, yaml).
  noExternal: [/^@berth\/core\/request-protocol$/, ...inline],
  ...(inline.length > 0 ? { banner: { js: requireShim }, onSuccess: async () => copyInlinedLicences() } : {}),
  // The shell programs a package sends into sandboxes (`src/**/*.sh`) are bundled as their text,
  // so dist needs no .sh file; tests load the same imports through vitest.shared.ts.
  loader: { '.sh': 'text' },
});
