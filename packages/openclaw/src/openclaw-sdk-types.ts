// The part of OpenClaw's plugin SDK that this package uses, declared here because the
// `openclaw/plugin-sdk/sandbox` subpath ships no type declarations. Read from OpenClaw
// 2026.9.6 (`dist/plugin-sdk/*.d.ts` and the sandbox runtime); only the members Berth relies on
// are spelled out, so a newer OpenClaw that adds members still fits.

/** OpenClaw's logger as a plugin receives it. */
export interface OpenClawPluginLogger {
  debug?: (message: string) => void;
  info: (message: string) => void;
  warn: (message: string) => void;
  error: (message: string) => void;
}

/** What a plugin service's `start`/`stop` receive. */
export interface OpenClawPluginServiceContext {
  readonly stateDir: string;
  readonly logger: OpenClawPluginLogger;
}

/** A long-lived plugin service; OpenClaw stops it when the gateway shuts down. */
export interface OpenClawPluginService {
  id: string;
  start: (context: OpenClawPluginServiceContext) => void | Promise<void>;
  stop?: (context: OpenClawPluginServiceContext) => void | Promise<void>;
}

/**
 * How a plugin was loaded: `full` is the live gateway; the others are read-only passes
 * (capability discovery, CLI metadata, setup) that must not start sockets or clients.
 */
export type OpenClawRegistrationMode = 'full' | 'discovery' | 'tool-discovery' | 'setup-only' | 'setup-runtime' | 'cli-metadata';

/** The `api` object `register(api)` receives (the members Berth uses). */
export interface OpenClawPluginApi {
  readonly id: string;
  readonly registrationMode: OpenClawRegistrationMode;
  /** `plugins.entries.<id>.config` from `openclaw.json`. */
  readonly pluginConfig?: Record<string, unknown>;
  /** The plugin's own folder. */
  readonly rootDir?: string;
  readonly logger: OpenClawPluginLogger;
  registerService(service: OpenClawPluginService): void;
  /**
   * Registers a typed hook. Conversation hooks (`before_agent_finalize` among them) of a plugin
   * that is not bundled are dropped with a warning unless `plugins.entries.<id>.hooks.allowConversationAccess`
   * is true; `timeoutMs` is the handler's budget (default 15 s) unless the operator's
   * `hooks.timeoutMs` / `hooks.timeouts.<name>` says otherwise.
   */
  on?(hookName: string, handler: (event: never, context: never) => unknown, options?: { readonly timeoutMs?: number; readonly priority?: number }): void;
}

/** The context a typed hook receives (the members Berth reads). */
export interface OpenClawHookContext {
  readonly sessionKey?: string;
  readonly runId?: string;
  readonly workspaceDir?: string;
  readonly [key: string]: unknown;
}

/** The event of `before_agent_finalize`: the run's natural final answer, before OpenClaw builds the reply from it. */
export interface OpenClawBeforeAgentFinalizeEvent {
  readonly runId?: string;
  readonly sessionKey?: string;
  /** The final assistant message's visible text (its `MEDIA:` lines included). */
  readonly lastAssistantMessage?: string;
  readonly [key: string]: unknown;
}

/** What `definePluginEntry` takes. */
export interface OpenClawPluginEntryOptions {
  id: string;
  name: string;
  description: string;
  register: (api: OpenClawPluginApi) => void;
}

/** The sandbox section of the agent's config, as the backend factory receives it. */
export interface OpenClawSandboxConfig {
  /** `session`, `agent` or `shared`: how OpenClaw groups sessions into one sandbox. */
  readonly scope?: string;
  readonly workspaceAccess?: 'none' | 'ro' | 'rw';
  readonly backend?: string;
  readonly [key: string]: unknown;
}

/** What a sandbox backend factory learns: the session's key, never its sender. */
export interface OpenClawCreateSandboxBackendParams {
  /** The session's key, e.g. `agent:main:telegram:direct:123`. */
  readonly sessionKey: string;
  /** OpenClaw's sandbox grouping key: the session key plus a workspace suffix for `scope: session`. */
  readonly scopeKey: string;
  /** OpenClaw's host folder for this sandbox's workspace (Berth does not mount it). */
  readonly workspaceDir: string;
  readonly agentWorkspaceDir: string;
  readonly cfg: OpenClawSandboxConfig;
  readonly [key: string]: unknown;
}

/** What `buildExecSpec` returns: the process OpenClaw spawns for one command. */
export interface OpenClawSandboxExecSpec {
  argv: string[];
  /** The spawned process's whole environment (OpenClaw does not add its own). */
  env: Record<string, string | undefined>;
  /** Host folder the process starts in. */
  cwd?: string;
  stdinMode: 'pipe-open' | 'pipe-closed';
  finalizeToken?: unknown;
}

/** A script OpenClaw runs in the sandbox for its own needs (file operations, probes). */
export interface OpenClawSandboxCommandParams {
  script: string;
  /** Positional arguments of the script (`$1`, `$2`, …). */
  args?: string[];
  stdin?: Buffer | string;
  /** When false, a non-zero exit status is an error. */
  allowFailure?: boolean;
  signal?: AbortSignal;
}

/** A script's buffered result. */
export interface OpenClawSandboxCommandResult {
  stdout: Buffer;
  stderr: Buffer;
  code: number;
}

/** A path as the file tools see it. */
export interface OpenClawSandboxResolvedPath {
  hostPath?: string;
  relativePath: string;
  containerPath: string;
}

/** The stat result of the file tools. */
export interface OpenClawSandboxFsStat {
  type: 'file' | 'directory' | 'other';
  size: number;
  mtimeMs: number;
}

/** One entry of a directory listing. */
export interface OpenClawDirectoryEntry {
  name: string;
  isDirectory: boolean;
}

/** What OpenClaw passes to `createFsBridge`. */
export interface OpenClawSandboxFsBridgeContext {
  readonly workspaceDir: string;
  readonly agentWorkspaceDir: string;
  readonly workspaceAccess: 'none' | 'ro' | 'rw';
  readonly containerName: string;
  readonly containerWorkdir: string;
  readonly [key: string]: unknown;
}

/** The file operations OpenClaw's read, write, edit, ls and apply_patch tools call. */
export interface OpenClawSandboxFsBridge {
  /** Runtime roots and the host folders OpenClaw's path guards project them onto. */
  readonly pathMappings?: readonly { readonly hostRoot: string; readonly containerRoot: string }[];
  resolvePath(params: { filePath: string; cwd?: string }): OpenClawSandboxResolvedPath;
  readDirectory?(params: { filePath: string; cwd?: string; signal?: AbortSignal }): Promise<OpenClawDirectoryEntry[]>;
  readFile(params: { filePath: string; cwd?: string; signal?: AbortSignal; maxBytes?: number }): Promise<Buffer>;
  copyFile?(params: { sourcePath: string; destinationPath: string; cwd?: string; mkdir?: boolean; signal?: AbortSignal }): Promise<void>;
  writeFile(params: { filePath: string; cwd?: string; data: Buffer | string; encoding?: BufferEncoding; mkdir?: boolean; signal?: AbortSignal }): Promise<void>;
  createFileExclusive?(params: {
    filePath: string;
    cwd?: string;
    data: Buffer | string;
    encoding?: BufferEncoding;
    mkdir?: boolean;
    signal?: AbortSignal;
  }): Promise<'created' | 'exists'>;
  mkdirp(params: { filePath: string; cwd?: string; signal?: AbortSignal }): Promise<void>;
  remove(params: { filePath: string; cwd?: string; recursive?: boolean; force?: boolean; signal?: AbortSignal }): Promise<void>;
  rename(params: { from: string; to: string; cwd?: string; signal?: AbortSignal }): Promise<void>;
  stat(params: { filePath: string; cwd?: string; signal?: AbortSignal }): Promise<OpenClawSandboxFsStat | null>;
}

/** The live sandbox of one session, as a backend factory returns it. */
export interface OpenClawSandboxBackendHandle {
  id: string;
  runtimeId: string;
  runtimeLabel: string;
  /** The container folder commands start in. */
  workdir: string;
  env?: Record<string, string>;
  configLabel?: string;
  configLabelKind?: string;
  /** `backend`: the backend proves a requested working folder exists (it is not on the gateway's disk). */
  workdirValidation?: 'host' | 'backend';
  validateWorkdir?: (workdir: string) => Promise<string | null>;
  workdirRoots?: readonly string[];
  capabilities?: { browser?: boolean; readOnlyResourceMounts?: boolean };
  buildExecSpec(params: { command: string; workdir?: string; env: Record<string, string>; usePty: boolean }): Promise<OpenClawSandboxExecSpec>;
  finalizeExec?: (params: { status: 'completed' | 'failed'; exitCode: number | null; timedOut: boolean; token?: unknown }) => Promise<void>;
  runShellCommand(params: OpenClawSandboxCommandParams): Promise<OpenClawSandboxCommandResult>;
  createFsBridge?: (params: { sandbox: OpenClawSandboxFsBridgeContext }) => OpenClawSandboxFsBridge;
}

/** One row of OpenClaw's sandbox registry (`openclaw sandbox list`). */
export interface OpenClawSandboxRegistryEntry {
  readonly containerName: string;
  readonly backendId?: string;
  /** OpenClaw's scope key of the sandbox. */
  readonly sessionKey?: string;
  readonly image?: string;
  readonly [key: string]: unknown;
}

/** Lifecycle hooks `openclaw sandbox list/recreate` and pruning call. */
export interface OpenClawSandboxBackendManager {
  describeRuntime(params: { entry: OpenClawSandboxRegistryEntry; config: unknown; agentId?: string }): Promise<{
    running: boolean;
    actualConfigLabel?: string;
    configLabelMatch: boolean;
  }>;
  removeRuntime(params: { entry: OpenClawSandboxRegistryEntry; config: unknown; agentId?: string }): Promise<void>;
}

/** What `registerSandboxBackend(id, registration)` takes. */
export interface OpenClawSandboxBackendRegistration {
  factory: (params: OpenClawCreateSandboxBackendParams) => Promise<OpenClawSandboxBackendHandle>;
  manager?: OpenClawSandboxBackendManager;
  /** The container working folder, answered without starting a sandbox. */
  resolveWorkdir?: (params: { sessionKey: string; scopeKey: string; cfg: OpenClawSandboxConfig }) => string;
  capabilities?: { readOnlyResourceMounts?: boolean };
}

/** The object `definePluginEntry` returns and OpenClaw loads as the module's default export. */
export interface OpenClawPluginEntry {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly register: (api: OpenClawPluginApi) => void;
}
