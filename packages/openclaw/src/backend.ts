// The Berth sandbox backend without OpenClaw's SDK: for embedding, tests and tools. The plugin
// entry OpenClaw loads is index.ts.
export { createBerthSandboxBackend, runtimeIdOf, type BerthSandboxBackend, type CreateBerthSandboxBackendOptions } from './create-berth-sandbox-backend.js';
export { createSandboxHandle, BERTH_SANDBOX_BACKEND_ID, type CreateSandboxHandleOptions } from './create-sandbox-handle.js';
export { createSandboxFsBridge, SandboxFsError, SANDBOX_WORKSPACE, type CreateSandboxFsBridgeOptions } from './create-sandbox-fs-bridge.js';
export { createSandboxShell, type CreateSandboxShellOptions, type SandboxShell, type SandboxScriptResult } from './create-sandbox-shell.js';
export { loadPluginConfig, openClawPluginConfigSchema, PLUGIN_CONFIG_KEY, type LoadedPluginConfig, type OpenClawPluginConfig } from './load-plugin-config.js';
export type * from './openclaw-sdk-types.js';
