import { createBerthPlugin } from './berth-plugin.js';

export { createBerthPlugin, providerNameFor, type BerthPlugin, type BerthPluginOptions } from './berth-plugin.js';
export { createBerth, createBerthResolver, type Berth, type BerthExecuteOptions, type CreateBerthOptions, type CreateBerthResolverOptions, type ExecuteTarget } from './create-berth.js';
export { createBackend, type BackendProgressListener, type CreateBackendOptions } from './create-backend.js';
export { createBerthPlatformRegistry } from './create-berth-platform-registry.js';
export { loadPlatformAdapters, type LoadPlatformAdaptersOptions } from './load-platform-adapters.js';
export { createTerminalProvider, combineOutput, type CreateTerminalProviderOptions } from './create-terminal-provider.js';
export { createInProcessTerminalRegistry, type InProcessTerminalRegistry } from './create-in-process-terminal-registry.js';
export { findEngine, type EngineEndpoint } from './find-engine.js';
export { runDemo, type DemoOptions, type DemoReport } from './demo/run-demo.js';
export { serveSandboxes, SocketPathError, type SandboxSocketServer, type ServeSandboxesOptions } from './socket/serve-sandboxes.js';
export { requestSandboxExec, SandboxSocketClientError } from './socket/request-sandbox-exec.js';
export { sandboxCommandArgv, type SandboxCommandArgvOptions } from './socket/sandbox-command-argv.js';
export { parseSandboxSocketRequest, SandboxSocketRequestError } from './socket/parse-sandbox-socket-request.js';
export {
  MAX_SANDBOX_SOCKET_REQUEST_BYTES,
  SANDBOX_SOCKET_PROTOCOL_VERSION,
  type SandboxSocketErrorResponse,
  type SandboxSocketRequest,
  type SandboxSocketResponse,
  type SandboxSocketResult,
} from './socket/protocol.js';

/** The Berth plugin a host registers: `host.registerPlugin(berth)`; see {@link createBerthPlugin}. */
const berthPlugin = createBerthPlugin();
export default berthPlugin;
