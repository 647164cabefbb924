import { describe, expect, it } from 'vitest';
import * as driver from './driver.js';
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
        'createSandboxRuntime',
        'describeRunningCap',
        'egressRuleset',
        'fileExitName',
        'helperScriptCommand',
        'loadCertificateAuthority',
        'localHostSize',
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
});
