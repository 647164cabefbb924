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
        'ChunkedReadError',
        'EGRESS_PROXY_PORT',
        'FILE_EXIT',
        'FILE_PROGRAMS',
        'FILE_ROOTS',
        'SANDBOX_LAYOUT',
        'SHARE_FLOOR_PIDS',
        'capacityReport',
        'channelsFolderOf',
        'createSandboxRuntime',
        'describeRunningCap',
        'egressRuleset',
        'fileExitName',
        'helperScriptCommand',
        'loadCertificateAuthority',
        'localHostSize',
        'openFifoChannel',
        'readBoundShares',
        'readInChunks',
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
});
