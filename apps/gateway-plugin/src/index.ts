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
export { helperScriptCommand, releaseDisksUnder } from '@berth/sandbox-runtime';
// The in-sandbox file kit, for OpenClaw's fs bridge (which depends on this package, not on the runtime).
export { ChunkedReadError, FILE_EXIT, FILE_PROGRAMS, fileExitName, readInChunks, SANDBOX_LAYOUT, type FileExitName } from '@berth/sandbox-runtime';
export { getSandboxFile, outboxBudgetOf, putHostFile, type GetFileResult, type PutFileResult } from './files/host-files.js';
export { ATTACHMENTS_FOLDER, FILE_ROOTS, readSandboxFile, sandboxPathOf, writeSandboxFile, type SandboxFile } from './files/sandbox-files.js';
// The socket server and its client are `@berth/gateway-plugin/socket`; the CLI (with the demo) is
// the `berth` binary. A host that imports the plugin loads neither.

/** The Berth plugin a host registers: `host.registerPlugin(berth)`; see {@link createBerthPlugin}. */
const berthPlugin = createBerthPlugin();
export default berthPlugin;
