import { defineConfig } from 'tsup';

export default defineConfig({
  // src/cli.ts starts with a `#!/usr/bin/env node` line, which esbuild keeps at the top of dist/cli.js.
  entry: { index: 'src/index.ts', cli: 'src/cli.ts' },
  format: ['esm'],
  dts: { entry: { index: 'src/index.ts' } },
  clean: true,
  sourcemap: true,
  target: 'node22',
});
