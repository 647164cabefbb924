import { readFileSync } from 'node:fs';
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
  noExternal: [/^@berth\/core\/request-protocol$/],
  // The shell programs a package sends into sandboxes (`src/**/*.sh`) are bundled as their text,
  // so dist needs no .sh file; tests load the same imports through vitest.shared.ts.
  loader: { '.sh': 'text' },
});
