export { createSandboxRuntime, type SandboxRuntime, type SandboxRuntimeOptions } from './create-sandbox-runtime.js';
export type { ProgressEvent } from './runtime-context.js';
export { sandboxSettings, SANDBOX_SETTING_KEYS, type SandboxSettings, type SandboxSettingsInput } from './sandbox-settings.js';
export { buildSandboxSpec, HOME_TARGET, LABELS, MANAGED_BY, SANDBOX_HOSTNAME, WORKSPACE_TARGET, type BuildSandboxSpecOptions } from './sandbox-spec.js';
export { assertScopeFolder } from './host-folders.js';
export { autoMaxRunning, capacityReport, localHostSize, maxRunningOf, type HostSize } from './capacity.js';
export { createScopeDisks, diskUnenforcedReason, releaseDisksUnder, type ScopeDisks } from './scope-disks.js';
export { BLOCKED_RANGES, createEgressFirewall, egressRuleset, egressTableName, egressUnenforcedReason, hostResolvers, resolveEgressException, type EgressException, type EgressFirewall } from './egress-firewall.js';
export { RUNNING_PROBE, SESSION_PROCESS, SPARE_PROCESS } from './shell-protocol.js';
