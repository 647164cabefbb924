// `@berth/sandbox-runtime`: what hosts use — the runtime and its settings, what `berth ls` and
// `doctor` say of capacity, what `berth top` reads (each sandbox's meters, the audit file's tail), a helper script's command, the disks to release before a sandbox
// root is removed, the egress proxy's hooks, port, ruleset and CA (the attack suite reads them),
// a sandbox's FIFO channel (the plugin's bench), and the in-sandbox file kit (files/: the layout,
// the exit-code table, the chunked read the host checks). What only drivers use is
// `@berth/sandbox-runtime/driver` (driver.ts); a name is in one entry only (src/entry-points.test.ts).
export { createSandboxRuntime, type SandboxRuntime } from './create-sandbox-runtime.js';
export type { SandboxRuntimeOptions } from './sandbox-runtime-options.js';
export { releaseDisksUnder } from './disks/scope-disks.js';
export type { EgressProxyHooks } from './egress/egress-broker.js';
export { EGRESS_PROXY_PORT, egressRuleset } from './egress/egress-firewall.js';
export { loadCertificateAuthority, type CertificateAuthority } from './egress/egress-proxy/certificate-authority.js';
export { capacityReport, describeRunningCap, localHostSize, type HostSize } from './lifecycle/capacity.js';
export { readBoundShares, SHARE_FLOOR_PIDS } from './lifecycle/fair-share.js';
export {
  createSandboxMeterReader,
  METER_REREAD_MS,
  meterSource,
  readSandboxMeters,
  type MeterSource,
  type SandboxMeter,
  type SandboxMeterReader,
} from './lifecycle/sandbox-meters.js';
export { AUDIT_TAIL_MIB, createAuditTail, type AuditReading, type AuditTally } from './audit/audit-tail.js';
export type { ProgressEvent } from './runtime-context.js';
export { sandboxSettings, type SandboxSettings, type SandboxSettingsInput } from './sandbox-settings.js';
export { channelsFolderOf, openFifoChannel } from './shell/fifo-channel.js';
export { helperScriptCommand } from './shell/shell-words.js';
export { FILE_EXIT, fileExitName, type FileExitName } from './files/file-exit-codes.js';
export { FILE_PROGRAMS } from './files/file-programs.js';
export { ChunkedReadError, readInChunks, type ChunkedReadRefusal, type FileProgramResult, type ReadInChunksOptions } from './files/read-in-chunks.js';
export { FILE_ROOTS, SANDBOX_LAYOUT } from './files/sandbox-layout.js';
