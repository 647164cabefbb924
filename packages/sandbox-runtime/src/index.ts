export { createSandboxRuntime, type SandboxRuntime, type SandboxRuntimeOptions } from './create-sandbox-runtime.js';
export type { ProgressEvent } from './runtime-context.js';
export { backendOptionsSchema, defineBackend, type BackendDefinition, type BackendOptions } from './define-backend.js';
export { sandboxSettings, type SandboxSettings, type SandboxSettingsInput } from './sandbox-settings.js';
export {
  buildSandboxSpec,
  CHANNELS_TARGET,
  HOME_TARGET,
  KEEP_ALIVE_COMMAND,
  LABELS,
  MANAGED_BY,
  WORKSPACE_TARGET,
  type BuildSandboxSpecOptions,
} from './sandbox-spec.js';
export { channelsFolderOf, openFifoChannel } from './shell/fifo-channel.js';
export { createExecChannelEvents, writableTo, type ExecChannelEvents } from './shell/exec-channel-events.js';
export { isProcessIdentityGone, processIdentity } from './lifecycle/process-identity.js';
export { capacityReport, describeRunningCap, localHostSize, PRESSURE_HIGH, type HostSize } from './lifecycle/capacity.js';
export { GVISOR_FALLBACKS, isOlderRelease, runtimeFacts, runtimeRelease, TESTED_RUNTIME_RELEASES } from './oci-runtime.js';
export { prepareSharedBound, readBoundPressure, type SharedBound } from './lifecycle/shared-bound.js';
export { releaseDisksUnder } from './disks/scope-disks.js';
export {
  BRIDGE_NAME_PREFIX,
  createEgressFirewall,
  EGRESS_PROXY_PORT,
  egressRuleset,
  egressTableName,
  installationRuleset,
  installationTableName,
  installationTag,
  pruneInstallationTables,
  resolveEgressEntry,
  sandboxBridgeName,
  type EgressException,
  type EgressFirewall,
} from './egress/egress-firewall.js';
export { RUNNING_PROBE, SESSION_PROCESS, SPARE_PROCESS } from './shell/shell-protocol.js';
export { insideProcessListing, isIdleProcess, isSandboxBusy, type SandboxProcessList } from './lifecycle/is-sandbox-busy.js';
export { helperScriptCommand, quoteShell } from './shell/shell-words.js';
export { CA_CERTIFICATE_FILE, CA_KEY_FILE, loadCertificateAuthority, type CertificateAuthority } from './egress/egress-proxy/certificate-authority.js';
export { createEgressProxy, type EgressProxy, type EgressProxyOptions, type ProxyClient } from './egress/egress-proxy/egress-proxy.js';
export { CA_BUNDLE_FILE, CA_BUNDLE_TARGET, createEgressBroker, EGRESS_FOLDER, type EgressBroker, type EgressProxyHooks } from './egress/egress-broker.js';
export { createAddressPolicy } from './egress/egress-proxy/address-policy.js';
export { canonicalHost, formatHostPattern, hostMatches, parseHostPattern, type HostPattern } from './egress/egress-proxy/host-patterns.js';
export {
  PLACEHOLDER_PATTERN,
  placeholderFor,
  substituteRequest,
  type BrokeredValue,
  type PlaceholderTable,
  type Substitution,
} from './egress/egress-proxy/placeholders.js';
