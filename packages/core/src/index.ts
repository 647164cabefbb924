export * from './errors.js';
export * from './identity.js';
export * from './encode-name.js';
export * from './platform-adapter.js';
export * from './platform-registry.js';
export * from './identity-links.js';
export { parseTypedIdentity, resolveTypedIdentity } from './resolve-typed-identity.js';
export * from './session-context.js';
export * from './session-key.js';
export { assertOneSessionStore, loadedCoreCopies, SHARED_STATE_VERSION, type CoreCopy } from './core-copies.js';
export * from './scope.js';
export * from './sandbox-paths.js';
export {
  CHANNELS_FOLDER,
  disksFolderOf,
  DISKS_FOLDER,
  hermesHome,
  INSTALLATION_KEY_FILE,
  LAST_USED_FILE,
  LOCKS_FOLDER,
  PURGE_FOLDER,
  resolveSandboxDir,
  SANDBOX_ROOT_FOLDER,
  sandboxRootOf,
} from './host-layout.js';
export * from './sandbox-name.js';
export * from './config.js';
export {
  BERTH_FAILURE_EXIT_CODE,
  DEFAULT_COMMAND_TIMEOUT_SECONDS,
  isCommandTimeoutText,
  MAX_COMMAND_TIMEOUT_SECONDS,
  MAX_SANDBOX_SOCKET_REQUEST_BYTES,
  PLAIN_TASK_ID_PATTERN,
  platformAndUserTogether,
  requestProtocolConstants,
  SANDBOX_SOCKET_PROTOCOL_VERSION,
  TIMEOUT_EXIT_CODE,
  type RequestProtocolConstants,
} from './request-protocol.js';
export { cidrWithin, egressExceptionProblem, isHostNameEntry, LINK_LOCAL_RANGE, splitEgressEntry } from './egress-exception.js';
export * from './environment-index.js';
export * from './resolve-environment.js';
export * from './redact.js';
export * from './backend.js';
export * from './driver.js';
export * from './host.js';
export * from './sandbox-resolver.js';
