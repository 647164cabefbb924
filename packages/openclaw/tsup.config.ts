import { defineConfig } from 'tsup';

export default defineConfig({
  // index: the entry OpenClaw loads (it imports openclaw/plugin-sdk/*, which only a gateway
  // provides); backend: the same pieces without OpenClaw, for embedding and tests.
  entry: { index: 'src/index.ts', backend: 'src/backend.ts' },
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node22',
  // Only the gateway resolves the host SDK; never bundle or resolve it at build time.
  external: [/^openclaw(\/|$)/],
});
