import type { HostLogger } from '@berth/core';
import { definePluginEntry } from 'openclaw/plugin-sdk/plugin-entry';
import { registerSandboxBackend } from 'openclaw/plugin-sdk/sandbox';
import { createBerthSandboxBackend, type BerthSandboxBackend } from './create-berth-sandbox-backend.js';
import { BERTH_SANDBOX_BACKEND_ID } from './create-sandbox-handle.js';
import type { OpenClawBeforeAgentFinalizeEvent, OpenClawHookContext, OpenClawPluginApi, OpenClawPluginEntry } from './openclaw-sdk-types.js';

export type { OpenClawPluginApi, OpenClawPluginEntry } from './openclaw-sdk-types.js';

/** Milliseconds a file hook may take: a 50 MB transfer runs in about 70 steps through the sandbox's shell. */
const FILE_HOOK_TIMEOUT_MS = 120_000;

/** The plugin id in `openclaw.plugin.json` and `plugins.entries`. */
const BERTH_PLUGIN_ID = 'berth';

// One live backend per gateway process: a reload's new registration replaces it.
let current: { backend: BerthSandboxBackend; restore: () => void } | undefined;

// OpenClaw may load this module more than once in one process (one instance per registration
// pass), and runs typed hooks from whichever pass's registry it activated; the live backend is
// therefore kept process-wide, as OpenClaw keeps sandbox backends (a Symbol.for on globalThis).
const LIVE_BACKEND = Symbol.for('berth.openclaw.liveBackend');
type LiveBackendHolder = { [LIVE_BACKEND]?: BerthSandboxBackend };
function liveBackend(): BerthSandboxBackend | undefined {
  return (globalThis as LiveBackendHolder)[LIVE_BACKEND];
}
function setLiveBackend(backend: BerthSandboxBackend | undefined): void {
  (globalThis as LiveBackendHolder)[LIVE_BACKEND] = backend;
}

function hostLogger(api: OpenClawPluginApi): HostLogger {
  return { info: (message) => api.logger.info(message), warn: (message) => api.logger.warn(message), error: (message) => api.logger.error(message) };
}

/**
 * Registers the `berth` sandbox backend with the gateway (`agents.defaults.sandbox.backend:
 * "berth"`), reading `plugins.entries.berth.config` and the gateway's environment. Only the
 * live gateway (`registrationMode: "full"`) registers it; OpenClaw's read-only passes
 * (discovery, CLI metadata) leave no socket or client behind.
 */
function registerBerth(api: OpenClawPluginApi): void {
  // Files between the chat and the sandbox (docs/openclaw.md, "Files"). Registered in every pass
  // that offers hooks: which pass's registry OpenClaw runs typed hooks from is its business, and
  // the handlers act only through the live backend, so a read-only pass starts nothing. A
  // transfer of up to docker_file_limit runs through the sandbox's shell in steps, hence the
  // longer budget. before_agent_finalize is a conversation hook: OpenClaw drops it unless
  // plugins.entries.berth.hooks.allowConversationAccess is true.
  api.on?.('before_tool_call', (_event: unknown, context: OpenClawHookContext) => liveBackend()?.hooks.beforeToolCall(context), {
    timeoutMs: FILE_HOOK_TIMEOUT_MS,
  });
  api.on?.(
    'before_agent_finalize',
    (event: OpenClawBeforeAgentFinalizeEvent, context: OpenClawHookContext) => liveBackend()?.hooks.beforeAgentFinalize(event, context),
    { timeoutMs: FILE_HOOK_TIMEOUT_MS },
  );
  if (api.registrationMode !== 'full') return;
  const logger = hostLogger(api);
  const backend = createBerthSandboxBackend({ pluginConfig: api.pluginConfig, environment: process.env, logger });
  // The previous live backend, even one another instance of this module made.
  const previous = liveBackend() ?? current?.backend;
  current = { backend, restore: registerSandboxBackend(BERTH_SANDBOX_BACKEND_ID, backend.registration) };
  setLiveBackend(backend);
  if (previous && previous !== backend)
    void previous.close().catch((error: unknown) => logger.warn(`berth: closing the previous backend failed: ${String(error)}`));
  api.registerService({
    id: 'berth-sandboxes',
    // The socket is served from the gateway's start, so the first command finds it warm.
    start: async () => {
      await backend.start();
    },
    stop: async () => {
      if (current?.backend === backend) {
        current.restore();
        current = undefined;
      }
      if (liveBackend() === backend) setLiveBackend(undefined);
      await backend.close();
    },
  });
}

/** The OpenClaw plugin entry: `openclaw.extensions` points here. */
const berthPluginEntry: OpenClawPluginEntry = definePluginEntry({
  id: BERTH_PLUGIN_ID,
  name: 'Berth',
  description: 'One sandbox per messaging user: the berth sandbox backend.',
  register: registerBerth,
});

export default berthPluginEntry;
