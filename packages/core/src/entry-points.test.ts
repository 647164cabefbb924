import { describe, expect, it } from 'vitest';
import * as driver from './driver.js';
import * as core from './index.js';

// What each entry gives at run time, pinned: a new export is a decision to make here, not a
// leak of a module's helpers (`export *` once published parseIdentity and getActiveSessionUserId).
describe('the entry points of @berth/core', () => {
  it('@berth/core gives what hosts, plugins, platform adapters and tests use', () => {
    expect(Object.keys(core).sort()).toEqual(
      [
        'AmbiguousVariableError',
        'BERTH_FAILURE_EXIT_CODE',
        'BerthError',
        'ConfigError',
        'CoreVersionConflictError',
        'DEFAULT_COMMAND_TIMEOUT_SECONDS',
        'ENV_FORM_PATTERN',
        'EngineUnavailableError',
        'FOLDER_FORM_PATTERN',
        'IGNORED_GATEWAY_KEYS',
        'INSTALLATION_KEY_FILE',
        'IdentityCollisionError',
        'IdentityError',
        'ImageNotFoundError',
        'LOCKS_FOLDER',
        'MAX_COMMAND_TIMEOUT_SECONDS',
        'MAX_SANDBOX_SOCKET_REQUEST_BYTES',
        'PLAIN_TASK_ID_PATTERN',
        'PURGE_FOLDER',
        'PathEscapeError',
        'REDACTED',
        'SANDBOX_ERROR_CODES',
        'SANDBOX_SOCKET_PROTOCOL_VERSION',
        'SESSION_ENVIRONMENT_VARIABLES',
        'SandboxError',
        'SandboxFileError',
        'SessionAttributionError',
        'TIMEOUT_EXIT_CODE',
        'UnknownPlatformError',
        'UnsupportedSpecificationError',
        'assertBasicIdShape',
        'assertHost',
        'assertOneSessionStore',
        'assertPlatformAdapter',
        'assertSandboxBackend',
        'classifySessionKey',
        'createIdentityLinks',
        'createPlatformRegistry',
        'createRedactor',
        'createSandboxResolver',
        'decodeEnvComponent',
        'defaultConfigPath',
        'describeForMessage',
        'describeIgnoredKeys',
        'encodeEnvComponent',
        'encodeFolderComponent',
        'escapeForDisplay',
        'formatIdentity',
        'getActiveSession',
        'hermesHome',
        'isBerthError',
        'isCommandTimeoutText',
        'isRetryableSandboxError',
        'isSandboxConflict',
        'isSandboxGone',
        'loadConfig',
        'loadedCoreCopies',
        'parseTerminalConfig',
        'platformAndUserTogether',
        'requestProtocolConstants',
        'resolveSandboxDir',
        'resolveScope',
        'resolveTypedIdentity',
        'runWithSession',
        'sandboxRootOf',
        'sessionFromEnvironment',
        'taskFolderName',
        'terminalConfigSchema',
        'truncateForMessage',
      ].sort(),
    );
  });

  it('@berth/core/driver gives what only drivers and the runtime use, and nothing of the main entry', () => {
    const values = Object.keys(driver).sort();
    expect(values).toEqual(
      [
        'CHANNELS_FOLDER',
        'EGRESS_FOLDER',
        'LAST_USED_FILE',
        'LINK_LOCAL_RANGE',
        'MIN_SECRET_LENGTH',
        'assertSandboxDriver',
        'canonicalHost',
        'cidrWithin',
        'disksFolderOf',
        'formatHostPattern',
        'hasInstallationKey',
        'hostMatches',
        'isHostNameEntry',
        'loadInstallationKey',
        'parseHostPattern',
        'sandboxName',
        'splitEgressEntry',
      ].sort(),
    );
    expect(values.filter((name) => name in core)).toEqual([]);
  });
});
