import { afterAll, beforeAll, describe } from 'vitest';
import type { BackendCapabilities, SandboxBackend, TerminalConfig, TerminalConfigInput } from '@berth/core';
import { createBackendFixture, HOOK_TIMEOUT_MS } from './backend-suite/create-backend-fixture.js';
import { registerConcurrencyTests } from './backend-suite/register-concurrency-tests.js';
import { registerExecTests } from './backend-suite/register-exec-tests.js';
import { registerHardeningTests } from './backend-suite/register-hardening-tests.js';
import { registerIsolationTests } from './backend-suite/register-isolation-tests.js';
import { registerLayoutTests } from './backend-suite/register-layout-tests.js';
import { registerLifecycleTests } from './backend-suite/register-lifecycle-tests.js';
import { registerPoolTests } from './backend-suite/register-pool-tests.js';
import { registerSecretTests } from './backend-suite/register-secret-tests.js';
import { registerInterruptTests } from './backend-suite/register-interrupt-tests.js';
import { registerTimeoutTests } from './backend-suite/register-timeout-tests.js';

/** What the suite sees of a container through the engine, around the backend. */
export interface InspectedSandbox {
  /** The container's stored environment, as `NAME=value` entries. */
  readonly env: readonly string[];
  /** The container's labels. */
  readonly labels: Readonly<Record<string, string>>;
  /** The whole inspect document, when the engine gives one; searched for secret values too. */
  readonly document?: unknown;
}

/**
 * Engine-level hooks the suite uses to inject faults and to look at a sandbox from outside the
 * backend, the way an operator with engine access would.
 */
export interface BackendEngineHooks {
  /** Force-removes a container under a live session (what `docker rm -f` does). */
  removeContainer(containerId: string): Promise<void>;
  /** The container's stored configuration (what `docker inspect` shows). */
  inspect(containerId: string): Promise<InspectedSandbox>;
  /**
   * The sandbox's pids limit as the engine enforces it, for engines where it is not visible from
   * inside (Kubernetes sets it per pod, above the container's own cgroup). Absent: the suite
   * reads `pids.max` inside the sandbox.
   */
  pidsLimit?(containerId: string): Promise<number | undefined>;
}

/** Options of {@link testBackend}. */
export interface TestBackendOptions {
  /** The backend's name, used in the titles of the test groups. */
  readonly name: string;
  /**
   * Creates a backend for a config. Called once per config variant the suite needs (the default
   * one, and variants with `docker_network: false`, `docker_user_sandbox: false`,
   * `lifetime_seconds: 1` and `timeout: 2`), plus once more to test adoption.
   */
  readonly create: (config: TerminalConfig) => SandboxBackend | Promise<SandboxBackend>;
  /**
   * An image present on the engine, with a POSIX `sh` and the busybox applets `nc`, `ip`, `ps`,
   * `find`, `timeout`, `setsid` (and `su`, `mktemp`, with a `nobody` user, where the kernel does
   * not show `NoNewPrivs`).
   */
  readonly image: string;
  /**
   * Overrides the backend's own capability flags; a capability that ends up false skips its
   * tests (and says why).
   * @default backend.capabilities
   */
  readonly capabilities?: Partial<BackendCapabilities>;
  /** Engine-level hooks for fault injection and outside inspection. */
  readonly engine: BackendEngineHooks;
  /** Config keys applied to every config the suite builds (e.g. ulimits an engine needs). */
  readonly configOverrides?: Partial<TerminalConfigInput>;
}

/**
 * Registers the Berth backend conformance suite with vitest: isolation between users (files,
 * variables, network), the host layout, exec semantics, secrets, timeouts, interrupts and live
 * output, concurrency,
 * lifecycle (recreation, adoption, idle stop, purge), the warm pool and hardening, each tested against the real
 * engine. Call it at the top level of a `*.integration.test.ts` file.
 */
export function testBackend(options: TestBackendOptions): void {
  const fixture = createBackendFixture(options);
  describe(`testBackend: ${options.name}`, () => {
    beforeAll(() => fixture.setUp(), HOOK_TIMEOUT_MS);
    afterAll(() => fixture.tearDown(), HOOK_TIMEOUT_MS);
    registerIsolationTests(fixture);
    registerLayoutTests(fixture);
    registerExecTests(fixture);
    registerSecretTests(fixture);
    registerTimeoutTests(fixture);
    registerInterruptTests(fixture);
    registerConcurrencyTests(fixture);
    registerLifecycleTests(fixture);
    registerPoolTests(fixture);
    registerHardeningTests(fixture);
  });
}
