// `@berth/core`: what hosts, plugins, platform adapters, backends' users and their tests use.
// What only drivers and the sandbox runtime need (the driver contract's parts, the host layout's
// inner names, the installation key, sandbox names, egress entries) is `@berth/core/driver`
// (driver.ts); the request protocol alone, which imports nothing, is `@berth/core/request-protocol`.
export {
  AmbiguousVariableError,
  BerthError,
  ConfigError,
  CoreVersionConflictError,
  EngineUnavailableError,
  IdentityCollisionError,
  IdentityError,
  ImageNotFoundError,
  isBerthError,
  isRetryableSandboxError,
  isSandboxConflict,
  isSandboxGone,
  PathEscapeError,
  SandboxError,
  SandboxFileError,
  SessionAttributionError,
  UnknownPlatformError,
  UnsupportedSpecificationError,
} from './errors.js';
export {
  BERTH_ERROR_CODES,
  SANDBOX_ERROR_CODES,
  SOCKET_ERROR_CODES,
  type BerthErrorCode,
  type SandboxErrorCode,
  type SandboxFileErrorCode,
  type SocketErrorCode,
  type SocketRequestErrorCode,
} from './error-codes.js';
export { describeForMessage, escapeForDisplay, formatIdentity, truncateForMessage, type Identity } from './identity.js';
export { decodeEnvComponent, encodeEnvComponent, encodeFolderComponent } from './encode-name.js';
export { assertBasicIdShape, assertPlatformAdapter, ENV_FORM_PATTERN, FOLDER_FORM_PATTERN, type PlatformAdapterV1 } from './platform-adapter.js';
export { createPlatformRegistry, type PlatformRegistry, type PlatformRegistryOptions } from './platform-registry.js';
export { createIdentityLinks, type IdentityLinks } from './identity-links.js';
export { resolveTypedIdentity } from './resolve-typed-identity.js';
export {
  getActiveSession,
  runWithSession,
  SESSION_ENVIRONMENT_VARIABLES,
  SESSION_VARIABLE_FIELDS,
  sessionFromEnvironment,
  type SessionContext,
} from './session-context.js';
export { classifySessionKey, type SessionKeyMeaning } from './session-key.js';
export { assertOneSessionStore, loadedCoreCopies, type CoreCopy } from './core-copies.js';
export { DEFAULT_PROFILE, sessionProfile, splitProfileFolderName } from './profile.js';
export { resolveScope, taskFolderName, type ResolveScopeOptions, type SandboxScope, type TaskScope, type UserScope } from './scope.js';
export type { SandboxPaths } from './sandbox-paths.js';
export { expandHome, hermesHome, INSTALLATION_KEY_FILE, LOCKS_FOLDER, PURGE_FOLDER, resolveSandboxDir, sandboxRootOf } from './host-layout.js';
export { defaultConfigPath, describeIgnoredKeys, loadConfig, parseTerminalConfig, type LoadedConfig } from './config.js';
export { DEFAULT_LISTEN_HOST, LISTEN_ADDRESS_FORMS, parseListenAddress, type ListenAddress } from './listen-address.js';
export { IGNORED_GATEWAY_KEYS, terminalConfigSchema, type TerminalConfig, type TerminalConfigInput } from './terminal-config-schema.js';
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
export type { ResolvedEnvironment, ResolvedVariable, VariableSource } from './resolve-environment.js';
export type { EnvironmentIndex, UserVariableReading } from './environment-index.js';
export { createRedactor, REDACTED, type Redactor } from './redact.js';
export { secretForms } from './secret-forms.js';
export {
  assertSandboxBackend,
  type BackendCapabilities,
  type BackendDescription,
  type ExecRequest,
  type ExecResult,
  INTERRUPTED_EXIT_CODE,
  type SandboxBackend,
  type SandboxBackendV1,
  type SandboxInfo,
  type EgressDescription,
  type RuntimeDescription,
  type SandboxRequest,
  type SandboxState,
} from './backend.js';
// The driver contract is `@berth/core/driver`; its interface is here too, as a backend's users name it.
export type { EngineUsage, SandboxDriverV1 } from './driver.js';
export {
  assertHost,
  type BerthHostV1,
  type BerthPluginV1,
  type CreateEnvironmentOptions,
  type ExecuteOptions,
  type ExecuteResult,
  type HostLogger,
  type TerminalEnvironment,
  type TerminalEnvironmentProviderV1,
  type TerminalRegistryV1,
} from './host.js';
export { createSandboxResolver, type SandboxResolveOptions, type SandboxResolver } from './sandbox-resolver.js';
