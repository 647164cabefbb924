import { createBerthPlugin } from './berth-plugin.js';

export { createBerthPlugin, providerNameFor, type BerthPlugin, type BerthPluginOptions } from './berth-plugin.js';
export { createBerth, createBerthResolver, type Berth, type BerthExecuteOptions, type CreateBerthOptions, type CreateBerthResolverOptions, type ExecuteTarget } from './create-berth.js';
export { createBackend, type BackendProgressListener, type CreateBackendOptions } from './create-backend.js';
export { createBerthPlatformRegistry } from './create-berth-platform-registry.js';
export { loadPlatformAdapters, type LoadPlatformAdaptersOptions } from './load-platform-adapters.js';
export { createTerminalProvider, combineOutput, type CreateTerminalProviderOptions } from './create-terminal-provider.js';
export { createInProcessTerminalRegistry, type InProcessTerminalRegistry } from './create-in-process-terminal-registry.js';
// The socket server and its client are `@berth/gateway-plugin/socket`; the CLI (with the demo) is
// the `berth` binary. A host that imports the plugin loads neither.

/** The Berth plugin a host registers: `host.registerPlugin(berth)`; see {@link createBerthPlugin}. */
const berthPlugin = createBerthPlugin();
export default berthPlugin;
