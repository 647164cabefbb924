import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SandboxDriverV1, SandboxSpec } from '@berth/core/driver';
import { afterAll, beforeAll, describe } from 'vitest';
import { registerDriverChecks } from './driver-suite/register-driver-checks.js';

/** What the driver suite's tests, and a driver's own added ones, work with. */
export interface DriverTestContext {
  /** The driver under test (after set-up). */
  readonly driver: SandboxDriverV1;
  /** Random per-run tag: in every sandbox's name and labels. */
  readonly runId: string;
  /** The labels every sandbox of this run carries, and only those. */
  readonly runLabels: Readonly<Record<string, string>>;
  /**
   * The spec of a new sandbox of this run, named `berth-testkit-<runId>-<n>`, with the run's
   * labels and `labels`; its workspace and home are fresh folders (for a driver with host
   * folders). Its main process's command line holds {@link DriverTestContext.mainMarker}.
   */
  spec(labels?: Readonly<Record<string, string>>): Promise<SandboxSpec>;
  /** A word in every sandbox's main process's command line, to find it in a process list. */
  readonly mainMarker: string;
  /** Creates (with `prepare` first, where the driver has it) and starts a sandbox of `spec`; removed after the run. */
  running(spec?: SandboxSpec): Promise<string>;
  /** Records a sandbox to remove after the run. */
  track(id: string): void;
}

/** Options of {@link testDriver}. */
export interface TestDriverOptions {
  /** Shown in the test titles. @default the driver's `engine` */
  readonly name?: string;
  /** The driver under test, or a function making it (called once, before the tests). */
  readonly driver: SandboxDriverV1 | (() => SandboxDriverV1 | Promise<SandboxDriverV1>);
  /** An image present on the engine (nothing is pulled), with a POSIX `sh`, `sleep`, `cat` and `pwd`. */
  readonly image: string;
  /** The engine's last word on each spec the suite makes (other ulimits, a network of its own, …). */
  readonly adjustSpec?: (spec: SandboxSpec) => SandboxSpec;
  /** The driver cannot rename (its objects keep their names): the rename test is skipped, saying so. @default true */
  readonly renames?: boolean;
  /** Tests of the driver's own, registered in the suite's `describe` with its context. */
  readonly additionalTests?: (context: DriverTestContext) => void;
}

/** Timeout of one test: a sandbox or two made and started on a busy 2-core machine. */
export const DRIVER_TEST_TIMEOUT_MS = 60_000;

/**
 * Registers the driver conformance suite with vitest: what `SandboxDriverV1` (`@berth/core/driver`)
 * promises the runtime, checked against the driver itself — its version and methods, its engine's
 * answers, create (a taken name is `undefined`) and inspect by name and id, start, stop and remove
 * each fine twice, list by labels, a process through `openChannel` (stdin, stdout, stderr, exit
 * code, working folder), the processes `listProcesses` lists, rename, and a sandbox that is gone:
 * `undefined` from inspect, `SANDBOX_GONE` from start and `openChannel`. Call it at the top level of
 * a test file; Berth runs it against its fake driver (unit) and the Docker and Podman drivers
 * (integration).
 */
export function testDriver(options: TestDriverOptions): void {
  const runId = randomBytes(4).toString('hex');
  const runLabels = { 'dev.berth.testkit.run': runId };
  const mainMarker = `berth-testkit-main-${runId}`;
  const made = new Set<string>();
  let driver: SandboxDriverV1 | undefined;
  let folder = '';
  let count = 0;
  const context: DriverTestContext = {
    get driver() {
      if (!driver) throw new Error('the testDriver context is used before its beforeAll ran; call testDriver() at the top level of a test file');
      return driver;
    },
    runId,
    runLabels,
    mainMarker,
    async spec(labels = {}) {
      const name = `berth-testkit-${runId}-${++count}`;
      const workspace = path.join(folder, name, 'workspace');
      const home = path.join(folder, name, 'home');
      await mkdir(workspace, { recursive: true, mode: 0o700 });
      await mkdir(home, { recursive: true, mode: 0o700 });
      const spec: SandboxSpec = {
        name,
        image: options.image,
        hostname: 'sandbox',
        labels: { ...labels, ...runLabels },
        workspace,
        home,
        volumes: [],
        // A main process that waits and leaves at once on TERM, as the runtime's launcher does.
        command: ['/bin/sh', '-c', `: ${mainMarker}; trap "exit 0" TERM INT HUP; while :; do sleep 3600 & wait $!; done`],
        workingDir: '/workspace',
        limits: { cpus: 1, memoryMb: 256, pids: 256, nofile: 4096, nproc: 4096, tmpMb: 64, diskMb: 1024 },
        security: { capabilities: [], noNewPrivileges: true, readOnlyRoot: true },
        network: false,
        stopGraceSeconds: 1,
      };
      return options.adjustSpec ? options.adjustSpec(spec) : spec;
    },
    async running(given) {
      const spec = given ?? (await context.spec());
      await context.driver.prepare?.(spec);
      const id = await context.driver.create(spec);
      if (id === undefined) throw new Error(`create(${spec.name}) answered that another process holds the name, in a run of its own`);
      made.add(id);
      await context.driver.start(id, { justCreated: true });
      return id;
    },
    track: (id) => void made.add(id),
  };

  describe(`testDriver: ${options.name ?? 'driver'}`, () => {
    beforeAll(async () => {
      folder = await mkdtemp(path.join(tmpdir(), `berth-testkit-driver-${runId}-`));
      driver = typeof options.driver === 'function' ? await options.driver() : options.driver;
    }, DRIVER_TEST_TIMEOUT_MS);
    afterAll(async () => {
      // Every sandbox the run made, whatever the tests left; then the driver's connections.
      for (const id of made) await driver?.remove(id).catch(() => undefined);
      for (const sandbox of (await driver?.list(runLabels).catch(() => [])) ?? []) await driver?.remove(sandbox.id).catch(() => undefined);
      await driver?.close?.();
      if (folder) await rm(folder, { recursive: true, force: true });
    }, 2 * DRIVER_TEST_TIMEOUT_MS);
    registerDriverChecks(context, { renames: options.renames ?? true });
    options.additionalTests?.(context);
  });
}
