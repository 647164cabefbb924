// Every code a Berth error may carry, listed once: `BerthError`'s constructor takes only these,
// so a misspelt code does not compile, and hosts switch on them, so each is spelt for good.
// `berth serve` answers a refused request with one of them (a Berth error's own) or `INTERNAL`;
// the wire contract (docs/gateway-plugin.md, "The wire contract") lists them for the Python
// bridge and the Perl client. It imports nothing.

/**
 * Every code a {@link SandboxError} may carry. What a caller may do after each one is decided
 * once, in errors.ts ({@link isRetryableSandboxError}).
 */
export const SANDBOX_ERROR_CODES = [
  // What a driver maps its engine's answers to (404, 409, the rest), in its one mapping place.
  'SANDBOX_GONE',
  'SANDBOX_CONFLICT',
  'ENGINE_ERROR',
  // The sandbox's persistent shell.
  'SANDBOX_SESSION_CLOSED',
  'SANDBOX_SESSION_BUSY',
  'SANDBOX_SHELL_UNUSABLE',
  // The runtime's own refusals and failures.
  'BACKEND_CLOSED',
  'COMMAND_INVALID',
  'SANDBOX_LIMIT',
  // A user over a per-user limit (terminal.user_commands_per_minute, user_concurrent_commands).
  'USER_RATE_LIMIT',
  'USER_CONCURRENCY_LIMIT',
  'USER_CPU_LIMIT',
  'SANDBOX_NAME_TAKEN',
  'SANDBOX_PURGING',
  'SCOPE_BUSY',
  'LOCK_FAILED',
  'LOCK_UNAVAILABLE',
  'PURGE_INCOMPLETE',
  'PURGE_NEEDS_PATHS',
  'DISK_CLEANUP',
  'DISK_TOO_SMALL',
  'HOST_UNSUPPORTED',
  // Networks and egress.
  'EGRESS_ALLOW_UNRESOLVED',
  'EGRESS_RULES_FAILED',
  'EGRESS_ALLOWLIST_UNENFORCED',
  'NETWORK_NAME_TAKEN',
  'NETWORK_POOL_FULL',
  // A backend's options, its engine and the container spec it builds.
  'OPTIONS_INVALID',
  'ENGINE_NOT_PODMAN',
  'CONTAINER_HOST_INVALID',
  'SANDBOX_PATH_UNSUPPORTED',
  'SPEC_INVALID',
  'SPEC_UNSUPPORTED',
  // An engine that made a sandbox under another runtime than the one asked for.
  'RUNTIME_IGNORED',
] as const;

/** One of {@link SANDBOX_ERROR_CODES}. */
export type SandboxErrorCode = (typeof SANDBOX_ERROR_CODES)[number];

/** Every code a {@link SandboxFileError} may carry: a file between a chat and a sandbox, refused. */
const SANDBOX_FILE_ERROR_CODES = ['FILE_REFUSED', 'FILE_TOO_LARGE', 'FILE_NOT_FOUND', 'FILE_EXISTS', 'FILE_CHANGED'] as const;

/** One of the codes of a {@link SandboxFileError}. */
export type SandboxFileErrorCode = (typeof SANDBOX_FILE_ERROR_CODES)[number];

/** The codes of core's own errors, each raised by one class of errors.ts or by core's helpers. */
const CORE_ERROR_CODES = [
  'CONFIG_INVALID',
  'IDENTITY_INVALID',
  'IDENTITY_COLLISION',
  'ENV_AMBIGUOUS',
  'PLATFORM_UNKNOWN',
  'PATH_ESCAPE',
  'ENGINE_UNAVAILABLE',
  'IMAGE_NOT_FOUND',
  'SESSION_UNATTRIBUTABLE',
  'CORE_VERSION_CONFLICT',
  'SPECIFICATION_UNSUPPORTED',
  // The installation key that sandbox names are derived from (sandbox-name.ts).
  'INSTALLATION_KEY',
] as const;

/** `berth serve`'s own refusals of a request line: not JSON, too large, not a valid request, too slow, no room. */
const SOCKET_REQUEST_ERROR_CODES = ['REQUEST_MALFORMED', 'REQUEST_TOO_LARGE', 'REQUEST_INVALID', 'REQUEST_TIMEOUT', 'SERVER_BUSY'] as const;

/** One of `berth serve`'s own refusals of a request line. */
export type SocketRequestErrorCode = (typeof SOCKET_REQUEST_ERROR_CODES)[number];

/**
 * The codes of a host's or an operator's own calls, raised before or outside any request: the
 * CLI's usage, `sandboxCommandArgv`'s arguments, the socket path `berth serve` is started on,
 * `berth rm` of a sandbox that is not one's own, the names a plugin registers under, the
 * metrics listener's address.
 */
const HOST_ERROR_CODES = [
  'USAGE',
  'ARGUMENT_INVALID',
  'SOCKET_PATH',
  'NO_OWN_SANDBOX',
  'PROVIDER_NAME_TAKEN',
  'PROVIDER_UNKNOWN',
  'PROVIDER_NAME_RESERVED',
  'METRICS_LISTEN_FAILED',
] as const;

/** Every code a {@link BerthError} may carry, of core, the sandbox runtime, the drivers, `berth serve` and the host's calls. */
export const BERTH_ERROR_CODES = [
  ...CORE_ERROR_CODES,
  ...SANDBOX_ERROR_CODES,
  ...SANDBOX_FILE_ERROR_CODES,
  ...SOCKET_REQUEST_ERROR_CODES,
  ...HOST_ERROR_CODES,
] as const;

/** One of {@link BERTH_ERROR_CODES}: the type of `BerthError.code`. */
export type BerthErrorCode = (typeof BERTH_ERROR_CODES)[number];

/**
 * Every code an error answer of `berth serve` may carry: a Berth error's own code, passed through
 * as it was raised, or `INTERNAL` for a failure that was not a Berth error (its message says
 * "unexpected error"). The codes of {@link HOST_ERROR_CODES} are among them because the server
 * passes any Berth error's code through, though none is raised while a request is answered.
 */
export const SOCKET_ERROR_CODES = [...BERTH_ERROR_CODES, 'INTERNAL'] as const;

/** One of {@link SOCKET_ERROR_CODES}: the `code` of an error answer on the socket. */
export type SocketErrorCode = (typeof SOCKET_ERROR_CODES)[number];
