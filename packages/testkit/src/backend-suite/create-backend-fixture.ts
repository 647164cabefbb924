import { randomBytes, randomInt } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  assertSandboxBackend,
  createPlatformRegistry,
  createSandboxResolver,
  parseTerminalConfig,
  type BackendCapabilities,
  type ExecRequest,
  type ExecResult,
  type SandboxBackend,
  type SandboxInfo,
  type SandboxRequest,
  type SandboxResolver,
  type SessionContext,
  type TerminalConfig,
  type TerminalConfigInput,
} from '@berth/core';
import type { TestContext } from 'vitest';
import type { BackendEngineHooks, TestBackendOptions } from '../test-backend.js';

/**
 * Unmounts whatever the backend mounted under one of the suite's own temporary folders (a
 * per-user disk, say), innermost first, so the folder can be deleted; the sandboxes are gone by then.
 */
async function unmountUnder(folder: string): Promise<void> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const inside = mountinfo
    .split('\n')
    .map((line) => (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))))
    .filter((point) => point.startsWith(`${folder}${path.sep}`))
    .sort((a, b) => b.length - a.length);
  for (const point of inside) await new Promise((resolve) => execFile('umount', ['--lazy', point], () => resolve(undefined)));
}

/** Timeout of one ordinary test: container creation on a busy 2-core machine included. */
export const TEST_TIMEOUT_MS = 60_000;
/** Timeout of set-up and tear-down (tear-down removes every container the run made). */
export const HOOK_TIMEOUT_MS = 180_000;

/**
 * The configs the suite runs under. Each gets its own backend instance and its own users, so
 * no container is ever asked to change its config mid-run.
 */
export type SuiteVariant = 'main' | 'offline' | 'legacy' | 'idle' | 'shortTimeout';

const VARIANT_OVERRIDES: Record<SuiteVariant, Partial<TerminalConfigInput>> = {
  main: {},
  // An operator who turns networking and masking off: one config, one user, two checks.
  offline: { docker_network: false, docker_mask_secrets: false },
  legacy: { docker_user_sandbox: false },
  // Stopped when idle, as a backend without pause is: freezing (on by default) has its own tests.
  idle: { lifetime_seconds: 1, docker_freeze_seconds: 0 },
  // Commands that give no timeout of their own are killed at terminal.timeout: this one.
  shortTimeout: { timeout: 2 },
};

/** The people (and tasks) of one run. Ids carry a per-run random part, so parallel runs never share one. */
export type SuiteUserName = 'alice' | 'bob' | 'carol' | 'dave' | 'erin' | 'frank' | 'mallory' | 'olive' | 'trent' | 'legacyUser' | 'task';

/** A user of the run, resolved by core exactly as a gateway would. */
export interface SuiteUser {
  readonly name: SuiteUserName;
  readonly variant: SuiteVariant;
  readonly request: SandboxRequest;
  /** The session the gateway would set for this user's messages (none for a bare task). */
  readonly session?: SessionContext;
  /** The per-user variables planted for this user in the gateway's environment (name in the sandbox to value). */
  readonly variables: Readonly<Record<string, string>>;
}

interface UserSpec {
  readonly variant: SuiteVariant;
  readonly session?: SessionContext;
  readonly taskId?: string;
  readonly variables?: Readonly<Record<string, string>>;
}

/** Shared state of one run of the suite: temp folders, configs, backends and users. */
export interface BackendFixture {
  readonly options: TestBackendOptions;
  readonly engine: BackendEngineHooks;
  /** Random per-run tag, safe in file names, ids and ports. */
  readonly runId: string;
  /** The run's `sandbox_dir` (after set-up). */
  readonly sandboxDir: string;
  /** A host folder outside `sandbox_dir`, for escape attempts (after set-up). */
  readonly outsideDir: string;
  /** The value of `BERTH_TESTKIT_FORWARDED`, a global variable forwarded to every sandbox. */
  readonly forwardedValue: string;
  /** A value planted in the gateway process's own environment that no sandbox may see. */
  readonly processCanary: string;
  /** The task id of the legacy-layout scope used with `docker_user_sandbox: false`. */
  readonly legacyTaskId: string;
  /** The task id of the task scope used without a user in the session. */
  readonly taskId: string;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  config(variant: SuiteVariant): TerminalConfig;
  resolver(variant: SuiteVariant): SandboxResolver;
  user(name: SuiteUserName): SuiteUser;
  backend(variant: SuiteVariant): Promise<SandboxBackend>;
  /** Runs a command in a user's sandbox through `doExec`. */
  run(user: SuiteUserName, command: string, exec?: Omit<ExecRequest, 'command'>): Promise<ExecResult>;
  /** The user's container id: after a command, from `list()`. */
  containerOf(user: SuiteUserName): Promise<string>;
  /** The entries of a user's scope in `backend.list()`. */
  entriesOf(user: SuiteUserName): Promise<SandboxInfo[]>;
  /** Records that a test removed the scope itself, so tear-down does not remove it again. */
  markRemoved(user: SuiteUserName): void;
  /** Whether `options.capabilities` turns a capability off (known when tests are registered). */
  declaredOff(capability: keyof BackendCapabilities): boolean;
  /** Skips the running test when the backend (or the options) says the capability is absent. */
  requireCapability(context: TestContext, capability: keyof BackendCapabilities): Promise<void>;
  /** Whether the capability is present: the options' word first, else the backend's (an absent optional flag counts as present). */
  has(capability: keyof BackendCapabilities): Promise<boolean>;
}

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

/** Builds the fixture; no I/O happens until `setUp()`. */
export function createBackendFixture(options: TestBackendOptions): BackendFixture {
  const runId = hex(4);
  // Numeric ids like Telegram's, random per run; the last digit tells the users apart.
  const numericBase = String(randomInt(100_000_000, 999_999_999));
  const forwardedValue = `fwd_${hex(12)}`;
  const processCanary = `canary_${hex(12)}`;
  const legacyTaskId = `berth-testkit-legacy-${runId}`;
  const taskId = `berth-testkit-task-${runId}`;

  const specs: Record<SuiteUserName, UserSpec> = {
    alice: {
      variant: 'main',
      session: { platform: 'telegram', userId: `${numericBase}1` },
      variables: {
        GITHUB_TOKEN: `ghp_alice_${hex(12)}`,
        // Quotes, command substitution and a newline: a backend that builds a shell script from values breaks here.
        TRICKY_VALUE: `t'"$(touch /tmp/berth-pwned-${runId})\`touch /tmp/berth-pwned-${runId}\`;\n$HOME ${hex(6)}`,
      },
    },
    // A Signal-like id with `-`: the case where naive prefix matching leaks variables.
    bob: { variant: 'main', session: { platform: 'signal', userId: `ab-cd-${runId}` }, variables: { TOKEN: `sig_bob_${hex(12)}` } },
    carol: { variant: 'main', session: { platform: 'telegram', userId: `${numericBase}3` } },
    dave: { variant: 'main', session: { platform: 'telegram', userId: `${numericBase}4` } },
    erin: { variant: 'idle', session: { platform: 'telegram', userId: `${numericBase}5` } },
    frank: { variant: 'main', session: { platform: 'telegram', userId: `${numericBase}6` } },
    mallory: { variant: 'main', session: { platform: 'telegram', userId: `${numericBase}7` } },
    olive: { variant: 'offline', session: { platform: 'telegram', userId: `${numericBase}2` }, variables: { GITHUB_TOKEN: `ghp_olive_${hex(12)}` } },
    trent: { variant: 'shortTimeout', session: { platform: 'telegram', userId: `${numericBase}9` } },
    legacyUser: { variant: 'legacy', session: { platform: 'telegram', userId: `${numericBase}8`, taskId: legacyTaskId } },
    task: { variant: 'main', taskId },
  };

  let sandboxDir = '';
  let outsideDir = '';
  const configs = new Map<SuiteVariant, TerminalConfig>();
  const resolvers = new Map<SuiteVariant, SandboxResolver>();
  const users = new Map<SuiteUserName, SuiteUser>();
  const backends = new Map<SuiteVariant, Promise<SandboxBackend>>();
  const used = new Set<SuiteUserName>();
  const removed = new Set<SuiteUserName>();
  let previousCanary: string | undefined;

  const notReady = (): never => {
    throw new Error('the testBackend fixture is used before its beforeAll ran; call testBackend() at the top level of a test file');
  };

  const fixture: BackendFixture = {
    options,
    engine: options.engine,
    runId,
    get sandboxDir() {
      return sandboxDir || notReady();
    },
    get outsideDir() {
      return outsideDir || notReady();
    },
    forwardedValue,
    processCanary,
    legacyTaskId,
    taskId,

    async setUp() {
      sandboxDir = await mkdtemp(path.join(tmpdir(), `berth-testkit-${runId}-`));
      outsideDir = await mkdtemp(path.join(tmpdir(), `berth-testkit-outside-${runId}-`));
      previousCanary = process.env.BERTH_TESTKIT_PROCESS_CANARY;
      // A backend that hands the gateway's own environment to containers would leak this.
      process.env.BERTH_TESTKIT_PROCESS_CANARY = processCanary;

      const registry = createPlatformRegistry();
      for (const variant of Object.keys(VARIANT_OVERRIDES) as SuiteVariant[]) {
        const overrides = options.configOverrides ?? {};
        configs.set(
          variant,
          parseTerminalConfig({
            ...overrides,
            docker_image: options.image,
            sandbox_dir: sandboxDir,
            docker_forward_env: [...(overrides.docker_forward_env ?? []), 'BERTH_TESTKIT_FORWARDED'],
            docker_env: { ...(overrides.docker_env ?? {}), BERTH_TESTKIT_STATIC: 'static-value' },
            ...VARIANT_OVERRIDES[variant],
          }),
        );
      }
      // The gateway's environment: per-user variables under the configured prefix, one global.
      const prefix = configs.get('main')!.docker_user_env_prefix;
      const environment: Record<string, string> = { BERTH_TESTKIT_FORWARDED: forwardedValue };
      for (const spec of Object.values(specs)) {
        const session = spec.session;
        if (!session?.platform || session.userId === undefined) continue;
        const identity = registry.resolve(session.platform, session.userId);
        for (const [name, value] of Object.entries(spec.variables ?? {})) {
          environment[`${prefix}_${registry.envPlatform(identity.platform)}_${registry.envName(identity)}_${name}`] = value;
        }
      }
      for (const variant of configs.keys()) {
        resolvers.set(variant, createSandboxResolver({ config: configs.get(variant)!, registry, environment }));
      }
      for (const [name, spec] of Object.entries(specs) as Array<[SuiteUserName, UserSpec]>) {
        const resolver = resolvers.get(spec.variant)!;
        const request = spec.session ? resolver.resolve({ session: spec.session }) : resolver.resolve({ taskId: spec.taskId! });
        users.set(name, { name, variant: spec.variant, request, ...(spec.session ? { session: spec.session } : {}), variables: spec.variables ?? {} });
      }
    },

    async tearDown() {
      const failures: string[] = [];
      for (const name of used) {
        if (removed.has(name)) continue;
        const user = users.get(name)!;
        try {
          const backend = await fixture.backend(user.variant);
          await backend.remove(user.request.scope.key, { purge: true, paths: user.request.paths });
        } catch (error) {
          failures.push(`remove ${user.request.scope.key}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      for (const [variant, pending] of backends) {
        try {
          await (await pending).close();
        } catch (error) {
          failures.push(`close the ${variant} backend: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      if (previousCanary === undefined) delete process.env.BERTH_TESTKIT_PROCESS_CANARY;
      else process.env.BERTH_TESTKIT_PROCESS_CANARY = previousCanary;
      for (const folder of [sandboxDir, outsideDir]) {
        if (!folder) continue;
        try {
          await unmountUnder(folder);
          await rm(folder, { recursive: true, force: true });
        } catch (error) {
          failures.push(`delete ${folder}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      if (failures.length > 0) throw new Error(`testBackend clean-up failed (${failures.length}): ${failures.join('; ')}`);
    },

    config: (variant) => configs.get(variant) ?? notReady(),
    resolver: (variant) => resolvers.get(variant) ?? notReady(),
    user: (name) => users.get(name) ?? notReady(),

    backend(variant) {
      let pending = backends.get(variant);
      if (!pending) {
        pending = Promise.resolve(options.create(fixture.config(variant))).then((backend) => {
          assertSandboxBackend(backend);
          return backend;
        });
        backends.set(variant, pending);
      }
      return pending;
    },

    async run(name, command, exec = {}) {
      const user = fixture.user(name);
      const backend = await fixture.backend(user.variant);
      used.add(name);
      return backend.doExec(user.request, { ...exec, command });
    },

    async containerOf(name) {
      const user = fixture.user(name);
      const backend = await fixture.backend(user.variant);
      used.add(name);
      // The contract has no "acquire": a command makes the sandbox, the inventory names it.
      await backend.doExec(user.request, { command: 'true' });
      const entries = (await backend.list()).filter((entry) => entry.scopeKey === user.request.scope.key);
      if (entries.length !== 1)
        throw new Error(`${backend.name} lists ${entries.length} sandboxes for ${user.request.scope.key} after a command; expected exactly one`);
      return entries[0]!.containerId;
    },

    async entriesOf(name) {
      const user = fixture.user(name);
      const backend = await fixture.backend(user.variant);
      return (await backend.list()).filter((entry) => entry.scopeKey === user.request.scope.key);
    },

    markRemoved(name) {
      removed.add(name);
    },

    declaredOff: (capability) => options.capabilities?.[capability] === false,

    async requireCapability(context, capability) {
      if (options.capabilities?.[capability] === false) context.skip(`capabilities.${capability} is false in the testBackend options`);
      if (options.capabilities?.[capability] === true) return;
      const backend = await fixture.backend('main');
      if (backend.capabilities[capability] === false) context.skip(`${backend.name} declares capabilities.${capability} false`);
    },

    async has(capability) {
      const declared = options.capabilities?.[capability];
      if (declared !== undefined) return declared;
      return (await fixture.backend('main')).capabilities[capability] !== false;
    },
  };
  return fixture;
}
