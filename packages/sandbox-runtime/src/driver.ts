// `@berth/sandbox-runtime/driver`: what a driver package uses to be a backend — its factory
// (`defineBackend` and the options every backend takes), the spec's targets and labels, an exec
// channel's listeners, the names the engine's objects carry (sandbox bridges, the egress tables),
// whose a spare network is, and the OCI runtime releases the tests ran. Whether a sandbox is busy
// is not here: a driver lists processes (`listProcesses`) and the runtime decides. Hosts import
// `@berth/sandbox-runtime`; a name is in one entry only (src/entry-points.test.ts).
export type { SandboxRuntime } from './create-sandbox-runtime.js';
export { backendOptionsSchema, defineBackend, type BackendDefinition, type BackendOptions } from './define-backend.js';
export { egressTableName, installationTableName, installationTag, sandboxBridgeName } from './egress/egress-firewall.js';
export { isProcessIdentityGone, processIdentity } from './lifecycle/process-identity.js';
export { isOlderRelease, TESTED_RUNTIME_RELEASES } from './oci-runtime.js';
export { buildSandboxSpec, CHANNELS_TARGET, HOME_TARGET, LABELS, MANAGED_BY, WORKSPACE_TARGET, type BuildSandboxSpecOptions } from './sandbox-spec.js';
export { createExecChannelEvents, writableTo, type ExecChannelEvents } from './shell/exec-channel-events.js';
