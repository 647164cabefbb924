import { createBerthPlugin } from './berth-plugin.js';

export { createBerthPlugin, type BerthPlugin, type BerthPluginOptions } from './berth-plugin.js';
export {
  createBerth,
  createBerthResolver,
  type Berth,
  type BerthExecuteOptions,
  type CreateBerthOptions,
  type CreateBerthResolverOptions,
  type ExecuteTarget,
} from './create-berth.js';
export type { BackendProgressListener } from './create-backend.js';
export { createBerthPlatformRegistry } from './create-berth-platform-registry.js';
export { createInProcessTerminalRegistry, type InProcessTerminalRegistry } from './create-in-process-terminal-registry.js';
export { releaseDisksUnder } from '@berth/sandbox-runtime';
// The socket server and its client are `@berth/gateway-plugin/socket`; the CLI (with the demo) is
// the `berth` binary. A host that imports the plugin loads neither.

/** The Berth plugin a host registers: `host.registerPlugin(berth)`; see {@link createBerthPlugin}. */
const berthPlugin = createBerthPlugin();
export default berthPlugin;
