import { type BerthErrorCode, SANDBOX_ERROR_CODES, type SandboxErrorCode, type SandboxFileErrorCode } from './error-codes.js';

/**
 * The mark every Berth error carries: the names of its classes, from its own up to `BerthError`.
 * It lives under a `Symbol.for` key, so `instanceof` works across copies of `@berth/core` loaded
 * in one process (a host and a plugin that each installed their own), where the classes differ.
 */
const ERROR_CLASSES = Symbol.for('dev.berth.error-classes');

/**
 * Every error Berth raises on purpose is a `BerthError`: it has a stable `code` a caller can
 * switch on, a one-line message that names the culprit and what to do, and never a secret value.
 * `instanceof BerthError` (and every subclass) holds for errors made by any copy of core.
 */
export class BerthError extends Error {
  /** A stable, machine-readable code such as `CONFIG_INVALID`: one of `BERTH_ERROR_CODES` (error-codes.ts). */
  readonly code: BerthErrorCode;

  constructor(code: BerthErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    const classes: string[] = [];
    for (let current: unknown = new.target; typeof current === 'function' && current !== Error; current = Object.getPrototypeOf(current)) {
      classes.push((current as { name: string }).name);
    }
    Object.defineProperty(this, ERROR_CLASSES, { value: Object.freeze(classes), enumerable: false });
  }

  // `this` is the class `instanceof` asks about (SandboxError, ConfigError, …), not always BerthError.
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: the subclass asked about (see above)
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    const classes = (value as { [ERROR_CLASSES]?: unknown } | null | undefined)?.[ERROR_CLASSES];
    // biome-ignore lint/complexity/noThisInStatic: the subclass asked about (see above)
    return Array.isArray(classes) && classes.includes(this.name);
  }
}

/** The configuration is malformed; `key` is the dotted path of the offending key. */
export class ConfigError extends BerthError {
  /** Dotted path of the key at fault, e.g. `terminal.container_memory`. */
  readonly key: string;

  constructor(key: string, message: string, options?: { cause?: unknown }) {
    super('CONFIG_INVALID', message, options);
    this.key = key;
  }
}

/** A raw sender id or identity is not acceptable (malformed, or not a user: a group, a channel). */
export class IdentityError extends BerthError {
  /** The platform the id was given for. */
  readonly platform: string;

  constructor(platform: string, message: string, options?: { cause?: unknown }) {
    super('IDENTITY_INVALID', message, options);
    this.platform = platform;
  }
}

/** Two distinct identities would share a folder, a container or a variable: refused. */
export class IdentityCollisionError extends BerthError {
  constructor(message: string) {
    super('IDENTITY_COLLISION', message);
  }
}

/** A variable in the gateway's environment could be read as belonging to more than one identity, or to none. */
export class AmbiguousVariableError extends BerthError {
  /** Name of the refused variable (never its value). */
  readonly variable: string;

  constructor(variable: string, message: string) {
    super('ENV_AMBIGUOUS', message);
    this.variable = variable;
  }
}

/** No platform adapter is registered for a platform name. */
export class UnknownPlatformError extends BerthError {
  /** The platform name that had no adapter. */
  readonly platform: string;

  constructor(platform: string, message: string) {
    super('PLATFORM_UNKNOWN', message);
    this.platform = platform;
  }
}

/** A path would leave the sandbox root. */
export class PathEscapeError extends BerthError {
  constructor(message: string) {
    super('PATH_ESCAPE', message);
  }
}

/** The container engine could not be reached; `endpoint` names the socket or URL that was tried. */
export class EngineUnavailableError extends BerthError {
  /** The socket path or URL that did not answer. */
  readonly endpoint: string;

  constructor(endpoint: string, message: string, options?: { cause?: unknown }) {
    super('ENGINE_UNAVAILABLE', message, options);
    this.endpoint = endpoint;
  }
}

/** The sandbox image is absent and could not be pulled. */
export class ImageNotFoundError extends BerthError {
  /** The image reference that is missing. */
  readonly image: string;

  constructor(image: string, message: string, options?: { cause?: unknown }) {
    super('IMAGE_NOT_FOUND', message, options);
    this.image = image;
  }
}

/**
 * The codes of an operation that never reached a command in the sandbox: the sandbox was gone
 * (removed, stopped, the engine restarted) or another process held its name or was removing it.
 * Bringing the sandbox back and running the command once more cannot run it twice.
 */
const NEVER_STARTED_CODES: ReadonlySet<SandboxErrorCode> = new Set<SandboxErrorCode>(['SANDBOX_GONE', 'SANDBOX_CONFLICT']);

/** The sandbox (container) is gone, or in a state where the operation cannot run. */
export class SandboxError extends BerthError {
  declare readonly code: SandboxErrorCode;
  /**
   * The operation never started in the sandbox, so the caller may bring the sandbox back and
   * retry it once. Decided from the code unless the error's maker knows better (a shell that
   * ended after its command had started).
   */
  declare readonly isRetryable: boolean;

  constructor(code: SandboxErrorCode, message: string, options?: { cause?: unknown; isRetryable?: boolean }) {
    super(code, message, options);
    // Not enumerable: what a log prints of the error, or a test compares, stays its code and message.
    Object.defineProperty(this, 'isRetryable', { value: options?.isRetryable ?? NEVER_STARTED_CODES.has(code), enumerable: false });
  }
}

/**
 * The {@link SandboxErrorCode} of `error`, when it carries one: a SandboxError of any copy of
 * core, or any error whose `code` is one (a driver of a third party's that sets only `code`).
 */
export function sandboxErrorCode(error: unknown): SandboxErrorCode | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && (SANDBOX_ERROR_CODES as readonly string[]).includes(code) ? (code as SandboxErrorCode) : undefined;
}

/** The sandbox is gone, or stopped under the operation (`SANDBOX_GONE`). */
export function isSandboxGone(error: unknown): boolean {
  return sandboxErrorCode(error) === 'SANDBOX_GONE';
}

/** A name taken, or a removal in progress elsewhere (`SANDBOX_CONFLICT`). */
export function isSandboxConflict(error: unknown): boolean {
  return sandboxErrorCode(error) === 'SANDBOX_CONFLICT';
}

/**
 * Whether the operation that failed with `error` never started in the sandbox, so that the
 * caller may bring the sandbox back and retry it once: the error's own `isRetryable` when it is
 * a SandboxError that says, else its code.
 */
export function isRetryableSandboxError(error: unknown): boolean {
  if (error instanceof SandboxError && typeof error.isRetryable === 'boolean') return error.isRetryable;
  const code = sandboxErrorCode(error);
  return code !== undefined && NEVER_STARTED_CODES.has(code);
}

/**
 * A file could not go between a chat and a sandbox (an attachment put in, a file named for
 * delivery taken out): refused before anything was read or left half-written. The message is
 * one line naming the path and what to do; it never holds the file's contents.
 */
export class SandboxFileError extends BerthError {
  declare readonly code: SandboxFileErrorCode;
  /** The path at fault, as the sandbox sees it (or the host path of an attachment). */
  readonly path: string;

  constructor(code: SandboxFileErrorCode, path: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.path = path;
  }
}

/**
 * Berth cannot tell whose sandbox a command belongs to (a session key of an unknown or shared
 * shape, a session read from process-wide variables in a host that runs messages concurrently):
 * refused, never run in a sandbox that others share. The message names the host setting that
 * fixes it.
 */
export class SessionAttributionError extends BerthError {
  constructor(message: string) {
    super('SESSION_UNATTRIBUTABLE', message);
  }
}

/** Two copies of `@berth/core` that cannot share one session store are loaded in one process. */
export class CoreVersionConflictError extends BerthError {
  constructor(message: string) {
    super('CORE_VERSION_CONFLICT', message);
  }
}

/** An implementation declares a contract version this release does not know. */
export class UnsupportedSpecificationError extends BerthError {
  constructor(what: string, version: unknown) {
    super(
      'SPECIFICATION_UNSUPPORTED',
      `${what} declares specificationVersion ${JSON.stringify(version)}, ` +
        `but this release of Berth supports only "v1"; upgrade Berth or use a ${what} built for v1`,
    );
  }
}

/** True when `error` is a BerthError, made by this copy of core or another one. */
export function isBerthError(error: unknown): error is BerthError {
  return error instanceof BerthError;
}
