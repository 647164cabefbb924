export { createSandboxRuntime, type SandboxRuntime, type SandboxRuntimeOptions } from './create-sandbox-runtime.js';
export type { ProgressEvent } from './runtime-context.js';
export { backendOptionsSchema, defineBackend, type BackendDefinition, type BackendOptions } from './define-backend.js';
export { sandboxSettings, SANDBOX_SETTING_KEYS, type SandboxSettings, type SandboxSettingsInput } from './sandbox-settings.js';
export { buildSandboxSpec, CHANNELS_TARGET, HOME_TARGET, KEEP_ALIVE_COMMAND, LABELS, MANAGED_BY, SANDBOX_HOSTNAME, WORKSPACE_TARGET, type BuildSandboxSpecOptions } from './sandbox-spec.js';
export { channelsFolderOf, openFifoChannel } from './fifo-channel.js';
export { createExecChannelEvents, writableTo, type ExecChannelEvents } from './exec-channel-events.js';
export { assertScopeFolder } from './host-folders.js';
export { isProcessIdentityGone, processIdentity } from './process-identity.js';
export { autoMaxRunning, capacityReport, localHostSize, maxRunningOf, type HostSize } from './capacity.js';
export { createScopeDisks, diskUnenforcedReason, releaseDisksUnder, type ScopeDisks } from './scope-disks.js';
export { tombstoneOf } from './purge-scope.js';
export {
  BLOCKED_RANGES,
  BRIDGE_NAME_PREFIX,
  createEgressFirewall,
  egressRuleset,
  egressTableName,
  egressUnenforcedReason,
  hostResolvers,
  installationRuleset,
  installationTableName,
  installationTag,
  pruneInstallationTables,
  resolveEgressEntry,
  resolveEgressException,
  sandboxBridgeName,
  type EgressException,
  type EgressFirewall,
} from './egress-firewall.js';
export { RUNNING_PROBE, SESSION_PROCESS, SPARE_PROCESS } from './shell-protocol.js';
export { isIdleProcess, isSandboxBusy, type SandboxProcessList } from './is-sandbox-busy.js';
