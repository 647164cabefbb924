import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as driver from './driver.js';
import * as metrics from './metrics.js';
import * as runtime from './index.js';

// What each entry gives at run time, pinned: a new export is a decision to make here, not a
// module's helper leaking out (one index once gave drivers and hosts alike 87 names, 49 of
// which no other package used).
describe('the entry points of @berth/sandbox-runtime', () => {
  it('@berth/sandbox-runtime gives what hosts use', () => {
    expect(Object.keys(runtime).sort()).toEqual(
      [
        'AUDIT_TAIL_MIB',
        'ChunkedReadError',
        'EGRESS_PROXY_PORT',
        'FILE_EXIT',
        'FILE_PROGRAMS',
        'FILE_ROOTS',
        'SANDBOX_LAYOUT',
        'SHARE_FLOOR_PIDS',
        'capacityReport',
        'channelsFolderOf',
        'createAuditTail',
        'createSandboxMeterReader',
        'createSandboxRuntime',
        'describeRunningCap',
        'egressRuleset',
        'fileExitName',
        'helperScriptCommand',
        'loadCertificateAuthority',
        'localHostSize',
        'METER_REREAD_MS',
        'meterSource',
        'openFifoChannel',
        'readBoundShares',
        'readInChunks',
        'readSandboxMeters',
        'releaseDisksUnder',
        'sandboxSettings',
      ].sort(),
    );
  });

  it('@berth/sandbox-runtime/driver gives what drivers use, and nothing of the main entry', () => {
    const values = Object.keys(driver).sort();
    expect(values).toEqual(
      [
        'CHANNELS_TARGET',
        'HOME_TARGET',
        'LABELS',
        'MANAGED_BY',
        'TESTED_RUNTIME_RELEASES',
        'WORKSPACE_TARGET',
        'backendOptionsSchema',
        'buildSandboxSpec',
        'createExecChannelEvents',
        'defineBackend',
        'egressTableName',
        'installationTableName',
        'installationTag',
        'isOlderRelease',
        'isProcessIdentityGone',
        'processIdentity',
        'sandboxBridgeName',
        'writableTo',
      ].sort(),
    );
    expect(values.filter((name) => name in runtime)).toEqual([]);
  });

  it('@berth/sandbox-runtime/metrics gives the metrics, and nothing of the other entries', () => {
    const values = Object.keys(metrics).sort();
    expect(values).toEqual(['EXEC_DURATION_BUCKETS', 'createRuntimeMetrics']);
    expect(values.filter((name) => name in runtime || name in driver)).toEqual([]);
  });

  it('loads prom-client from the metrics entry only: the main and driver entries never import it', () => {
    // The modules each entry imports at run time (`import type` is erased), followed through the package's own files.
    const reached = new Set<string>();
    const external = new Set<string>();
    const visit = (file: string): void => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const match of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?from\s+'([^']+)'/gm)) {
        const specifier = match[1]!;
        if (specifier.startsWith('.')) visit(path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts')));
        else external.add(specifier);
      }
    };
    visit(path.join(import.meta.dirname, 'index.ts'));
    visit(path.join(import.meta.dirname, 'driver.ts'));
    expect(reached.size).toBeGreaterThan(20);
    expect([...external].filter((name) => name.startsWith('prom-client'))).toEqual([]);
    expect(reached.has(path.join(import.meta.dirname, 'metrics', 'runtime-metrics.ts'))).toBe(false);
  });
});
